/**
 * Reading a watch's answer, whichever connection carries it (an HTTP/1.1 response or an HTTP/2 stream): one
 * JSON event per line, handed on in order, the stream paused for a turn of the event loop when its events
 * have held the loop too long.
 */
import type { Readable } from 'node:stream';
import { withoutManagedFields } from './managedfields.js';

/** An answer's or a watch event's JSON, its managedFields cut first when asked (see withoutManagedFields). */
export function parseJSON(json: Buffer, dropManagedFields: boolean | undefined): unknown {
  return JSON.parse((dropManagedFields ? withoutManagedFields(json) : json).toString('utf8'));
}

const NEWLINE = 0x0a;

/**
 * A watch stream pauses for a turn of the event loop after this much time handling its events: a backlog of
 * large objects (thousands of pods of a megabyte each, every status write coming back as an event) arrives in
 * one read after another, and handled without a pause it held timers and other sockets for most of a second.
 */
const WATCH_SLICE_MS = 10;

/** Whether a line holds only JSON whitespace (the API server ends each watch event with a newline). */
function isBlank(line: Buffer): boolean {
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c !== 0x20 && c !== 0x09 && c !== 0x0d && c !== 0x0a) return false;
  }
  return true;
}

/**
 * Reads the events of a watch's 200 answer until it ends. An event that is not JSON, or that `onEvent`
 * throws on, ends the stream through `destroy` (which must make `body` emit the error).
 */
export function readWatchEvents(
  body: Readable,
  onEvent: (event: { type: string; object: unknown }) => void,
  dropManagedFields: boolean | undefined,
  destroy: (err: Error) => void,
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    // The start of a line whose end has not arrived yet, in pieces: a megabyte pod comes in dozens of chunks,
    // and searching or re-slicing the whole buffer per chunk made that quadratic. Lines are cut from the bytes
    // and each decoded once, after its managedFields are cut (a newline byte is never part of a multi-byte
    // UTF-8 character).
    let partial: Buffer[] = [];
    // Time spent handling events since the stream last let the event loop turn (see WATCH_SLICE_MS).
    let busyMs = 0;
    body.on('data', (chunk: Buffer) => {
      const began = performance.now();
      let from = 0;
      let nl: number;
      while ((nl = chunk.indexOf(NEWLINE, from)) >= 0) {
        let line = chunk.subarray(from, nl);
        from = nl + 1;
        if (partial.length > 0) {
          partial.push(line);
          line = Buffer.concat(partial);
          partial = [];
        }
        if (isBlank(line)) continue;
        try {
          onEvent(parseJSON(line, dropManagedFields) as { type: string; object: unknown });
        } catch (err) {
          destroy(err as Error);
          return;
        }
      }
      if (from < chunk.length) partial.push(chunk.subarray(from));
      busyMs += performance.now() - began;
      if (busyMs >= WATCH_SLICE_MS) {
        body.pause();
        setImmediate(() => {
          busyMs = 0;
          body.resume();
        });
      }
    });
    body.on('end', () => resolve());
    body.on('error', reject);
    body.on('aborted', () => reject(new Error('watch stream aborted by the server')));
  });
}
