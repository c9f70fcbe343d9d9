/**
 * A file written whole or not at all: the data goes to `<file>.tmp`, which is then renamed over `file`, so a
 * crash leaves the old content or the new one (the kubelet's checkpoint and state files are written so).
 */
import { rename, writeFile } from 'node:fs/promises';

export async function replaceFile(file: string, data: string, mode: number): Promise<void> {
  const tmp = `${file}.tmp`;
  await writeFile(tmp, data, { mode });
  await rename(tmp, file);
}
