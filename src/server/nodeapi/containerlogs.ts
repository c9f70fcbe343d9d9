/**
 * `/containerLogs/{namespace}/{pod}/{container}` (kubectl logs): finds the container (or, with previous, the
 * one before it) in the pod's status, reads its lines from the runtime (when its capabilities say it hands
 * them out) or the CRI log file, and writes them as the query asks, following with backpressure until the
 * container stops or the pod goes.
 * Messages name the pod as the kubelet's do.
 */
import { once } from 'node:events';
import { access } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Container, ContainerStatus, Pod } from '../../api/core.js';
import type { Clock } from '../../util/clock.js';
import { errorMessage, isNotFound } from '../../util/errors.js';
import type { Logger } from '../../util/logger.js';
import { HttpError } from './httperror.js';
import {
  criFileLines,
  parseLines,
  parseLogOptions,
  polledLines,
  renderLogs,
  type FollowControl,
} from './logs.js';
import type { NodeApiTarget } from './registry.js';

export interface ContainerLogsContext {
  clock: Pick<Clock, 'now'>;
  logger: Logger;
  /** How often a followed log is polled for new lines (default 200 ms). */
  followPollMs?: number;
  /** Live streams; each is added while it runs, so the server can end them all on close. */
  live: Set<AbortController>;
}

/** `<type>://<id>` -> `<id>`. */
export function stripContainerIdScheme(id: string): string {
  const i = id.indexOf('://');
  return i >= 0 ? id.slice(i + 3) : id;
}

/** Splits `/containerLogs/{ns}/{pod}/{container}`; throws 400 on any other shape. */
export function parseContainerLogsPath(path: string): { namespace: string; pod: string; container: string } {
  const parts = path.split('/').slice(2);
  if (parts.length !== 3 || parts.some((p) => p === ''))
    throw new HttpError(
      400,
      `malformed path ${JSON.stringify(path)}: want /containerLogs/{namespace}/{pod}/{container}`,
    );
  let dec: string[];
  try {
    dec = parts.map((p) => decodeURIComponent(p));
  } catch {
    throw new HttpError(400, `malformed path ${JSON.stringify(path)}: bad escape`);
  }
  return { namespace: dec[0]!, pod: dec[1]!, container: dec[2]! };
}

function findContainer(pod: Pod, name: string): { spec?: Container; status?: ContainerStatus } {
  const spec = [
    ...(pod.spec?.containers ?? []),
    ...(pod.spec?.initContainers ?? []),
    ...(pod.spec?.ephemeralContainers ?? []),
  ].find((c) => c.name === name);
  const status = [
    ...(pod.status?.containerStatuses ?? []),
    ...(pod.status?.initContainerStatuses ?? []),
    ...(pod.status?.ephemeralContainerStatuses ?? []),
  ].find((c) => c.name === name);
  return { spec, status };
}

export async function serveContainerLogs(
  req: IncomingMessage,
  res: ServerResponse,
  target: { node: NodeApiTarget; pod: Pod; container: string; query: URLSearchParams },
  ctx: ContainerLogsContext,
): Promise<void> {
  const { node, pod, container, query } = target;
  // Messages name the pod as the kubelet's do (validateContainerLogStatus): by name, not namespace/name.
  const podName = pod.metadata.name ?? '';
  let opts;
  try {
    opts = parseLogOptions(query, ctx.clock.now());
  } catch (err) {
    throw new HttpError(400, errorMessage(err));
  }
  const { spec, status } = findContainer(pod, container);
  if (!spec && !status) throw new HttpError(404, `container "${container}" not found in pod "${podName}"`);
  let rawId: string | undefined;
  if (opts.previous) {
    rawId = status?.lastState?.terminated?.containerID;
    if (!rawId)
      throw new HttpError(400, `previous terminated container "${container}" in pod "${podName}" not found`);
  } else {
    rawId = status?.containerID || status?.state?.terminated?.containerID;
    if (!rawId) {
      const why = status?.state?.waiting?.reason ?? 'ContainerCreating';
      throw new HttpError(400, `container "${container}" in pod "${podName}" is waiting to start: ${why}`);
    }
  }
  const id = stripContainerIdScheme(rawId);
  const rt = node.runtime;
  const uid = pod.metadata.uid;
  const ac = new AbortController();
  const ctl: FollowControl = {
    follow: opts.follow,
    signal: ac.signal,
    pollMs: ctx.followPollMs,
    stillWriting: async () => {
      const cur = node.pod(pod.metadata.namespace ?? '', pod.metadata.name ?? '');
      if (!cur || cur.metadata.uid !== uid) return false;
      return (await rt.containerStatus(id)).state === 'running';
    },
  };
  let lines: AsyncIterable<string>;
  // A runtime that hands out log lines itself (RuntimeCapabilities.readLogs) has no log file to read.
  const readLogs = rt.capabilities.readLogs;
  if (readLogs) {
    try {
      readLogs(id);
    } catch (err) {
      throw new HttpError(
        isNotFound(err) ? 404 : 400,
        `container "${container}" in pod "${podName}": ${errorMessage(err)}`,
      );
    }
    lines = polledLines(() => readLogs(id), opts.tailLines, ctl);
  } else {
    let logPath: string;
    try {
      logPath = (await rt.containerStatus(id)).logPath;
    } catch (err) {
      throw new HttpError(
        isNotFound(err) ? 404 : 400,
        `container "${container}" in pod "${podName}": ${errorMessage(err)}`,
      );
    }
    if (!logPath) throw new HttpError(400, `container "${container}" in pod "${podName}" has no log file`);
    try {
      await access(logPath);
    } catch (err) {
      throw new HttpError(400, `failed to open log file ${logPath}: ${errorMessage(err)}`);
    }
    lines = criFileLines(logPath, opts.tailLines, ctl);
  }

  ctx.live.add(ac);
  const aborted = new Promise<void>((resolve) =>
    ac.signal.addEventListener('abort', () => resolve(), { once: true }),
  );
  const onClose = (): void => ac.abort();
  res.once('close', onClose);
  try {
    res.writeHead(200, {
      'Content-Type': 'text/plain; charset=utf-8',
      'X-Content-Type-Options': 'nosniff',
    });
    if (req.method === 'HEAD') return void res.end();
    res.flushHeaders();
    for await (const chunk of renderLogs(parseLines(lines), opts)) {
      if (ac.signal.aborted) break;
      if (!res.write(chunk)) {
        // Backpressure: stop reading until the client has taken what we sent (or left).
        await Promise.race([once(res, 'drain'), aborted]);
      }
    }
    if (!res.destroyed) res.end();
  } catch (err) {
    if (!ac.signal.aborted)
      ctx.logger.warn('node API: log stream failed', {
        pod: `${pod.metadata.namespace}/${podName}`,
        container,
        error: errorMessage(err),
      });
    res.destroy();
  } finally {
    res.removeListener('close', onClose);
    ctx.live.delete(ac);
  }
}
