// metrics-server's certificates beside a test control plane (see metricsserver.ts): its client certificate
// signed by the cluster CA, and a serving CA of its own with the serving certificate the aggregator verifies.
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { run } from './controlplane.js';
import { METRICS_SERVER_USER, NAME, NAMESPACE } from './metricsserver-objects.js';

async function openssl(args: string[]): Promise<void> {
  const r = await run('openssl', args);
  if (r.code !== 0) throw new Error(`openssl ${args[0]} failed (${r.code}): ${r.stderr.trim()}`);
}

const EC_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
const DAYS = ['-days', '3650'];
const LEAF = ['basicConstraints=critical,CA:FALSE', 'keyUsage=critical,digitalSignature,keyEncipherment'];

/**
 * An ECDSA P-256 key and a certificate for `subject` signed by `ca`, written as `<dir>/<name>.{key,crt}`;
 * `ext` are the certificate's extensions. Also used by the bench (bench/lib/metrics.ts).
 */
export async function signedLeaf(
  dir: string,
  name: string,
  subject: string,
  ca: { cert: string; key: string },
  ext: string[],
): Promise<{ cert: string; key: string }> {
  const f = (suffix: string): string => path.join(dir, `${name}.${suffix}`);
  await writeFile(f('ext'), ext.join('\n') + '\n');
  await openssl(['req', '-new', ...EC_KEY, '-keyout', f('key'), '-out', f('csr'), '-subj', subject]);
  await openssl([
    'x509',
    '-req',
    '-in',
    f('csr'),
    '-CA',
    ca.cert,
    '-CAkey',
    ca.key,
    '-set_serial',
    `0x${randomBytes(12).toString('hex')}`,
    ...DAYS,
    '-extfile',
    f('ext'),
    '-out',
    f('crt'),
  ]);
  return { cert: f('crt'), key: f('key') };
}

export interface MetricsServerPki {
  client: { cert: string; key: string };
  serving: { cert: string; key: string };
  servingCA: string;
}

export async function makePki(dir: string, clusterPki: string): Promise<MetricsServerPki> {
  const clusterCA = { cert: path.join(clusterPki, 'ca.crt'), key: path.join(clusterPki, 'ca.key') };
  const servingCA = { cert: path.join(dir, 'serving-ca.crt'), key: path.join(dir, 'serving-ca.key') };
  const [client, serving] = await Promise.all([
    signedLeaf(dir, 'client', `/CN=${METRICS_SERVER_USER}`, clusterCA, [
      ...LEAF,
      'extendedKeyUsage=clientAuth',
    ]),
    (async () => {
      await openssl([
        'req',
        '-x509',
        ...EC_KEY,
        '-keyout',
        servingCA.key,
        '-out',
        servingCA.cert,
        ...DAYS,
        '-subj',
        '/CN=kubelet-operator-test-metrics-server-ca',
        '-addext',
        'basicConstraints=critical,CA:TRUE',
        '-addext',
        'keyUsage=critical,keyCertSign,cRLSign,digitalSignature',
      ]);
      // The aggregator checks the name `<service>.<namespace>.svc`; the others are for direct callers.
      const sans = [
        `DNS:${NAME}.${NAMESPACE}.svc`,
        `DNS:${NAME}.${NAMESPACE}.svc.cluster.local`,
        'DNS:localhost',
        'IP:127.0.0.1',
      ];
      return signedLeaf(dir, 'serving', `/CN=${NAME}.${NAMESPACE}.svc`, servingCA, [
        ...LEAF,
        'extendedKeyUsage=serverAuth',
        `subjectAltName=${sans.join(',')}`,
      ]);
    })(),
  ]);
  return { client, serving, servingCA: servingCA.cert };
}
