/** Pod-spec pieces that unit and e2e tests both build. */
import type { EnvVar } from '../../src/api/core.js';

/** A busybox container (pulled only when missing) named `name` that runs `command`, with `extra` fields. */
export const busybox = (name: string, command: string[], extra: Record<string, unknown> = {}) => ({
  name,
  image: 'busybox',
  imagePullPolicy: 'IfNotPresent',
  command,
  ...extra,
});

/** A shell command line: `sh -c script`. */
export const sh = (script: string): string[] => ['sh', '-c', script];

/** An env var from key `key` of the env file `config.env` in volume `config` (EnvFiles' fileKeyRef). */
export const fileKeyRefVar = (name: string, key: string, optional?: boolean): EnvVar => ({
  name,
  valueFrom: {
    fileKeyRef: {
      volumeName: 'config',
      path: 'config.env',
      key,
      ...(optional !== undefined && { optional }),
    },
  },
});
