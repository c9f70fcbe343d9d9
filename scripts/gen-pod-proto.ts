/**
 * Writes src/kubelet/apis/pods/k8s/pod.json: the protobuf wire description of a core/v1 Pod (every message
 * reachable from k8s.io.api.core.v1.Pod, with names, field numbers and types only), which the pods API
 * encodes each pod with. Read from the Kubernetes API definitions of the Go module cache (k8s.io/api and
 * k8s.io/apimachinery at the kubelet's version); run it again when that version moves:
 *
 *   npx tsx scripts/gen-pod-proto.ts [GOMODCACHE] && npx prettier --write src/kubelet/apis/pods/k8s/pod.json
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

const API_VERSION = 'v0.37.2';
const cache = process.argv[2] ?? path.join(homedir(), 'go/pkg/mod');
const roots: Record<string, string> = {
  'k8s.io/api/': path.join(cache, `k8s.io/api@${API_VERSION}/`),
  'k8s.io/apimachinery/': path.join(cache, `k8s.io/apimachinery@${API_VERSION}/`),
};

const META = 'k8s.io.apimachinery.pkg.apis.meta.v1';
const root = new protobuf.Root();
root.resolvePath = (_origin, target) => {
  for (const [prefix, dir] of Object.entries(roots))
    if (target.startsWith(prefix)) return dir + target.slice(prefix.length);
  return target;
};
root.loadSync('k8s.io/api/core/v1/generated.proto', { keepCase: true });
root.resolveAll();

/** Every message type reachable from the Pod, by full name. */
const needed = new Map<string, protobuf.Type>();
function visit(t: protobuf.Type): void {
  if (needed.has(t.fullName)) return;
  needed.set(t.fullName, t);
  for (const f of t.fieldsArray) if (f.resolvedType instanceof protobuf.Type) visit(f.resolvedType);
}
visit(root.lookupType('k8s.io.api.core.v1.Pod'));

/** A fresh Root with those messages only, fields as name, id, rule and type (no comments, no options). */
const out = new protobuf.Root();
for (const t of [...needed.values()].sort((a, b) => a.fullName.localeCompare(b.fullName))) {
  const pkg = t.fullName.slice(1, t.fullName.lastIndexOf('.'));
  const copy = new protobuf.Type(t.name);
  for (const f of t.fieldsArray) {
    const type = f.resolvedType ? f.resolvedType.fullName.slice(1) : f.type;
    if (f.map)
      copy.add(new protobuf.MapField(f.name, f.id, (f as unknown as protobuf.MapField).keyType, type));
    else copy.add(new protobuf.Field(f.name, f.id, type, f.repeated ? 'repeated' : 'optional'));
  }
  out.define(pkg).add(copy);
}
/**
 * Embedded structs whose fields JSON writes inline (Go tag json:"") but protobuf keeps as a field of their
 * own (Probe's handler, Volume's volumeSource, ...): message -> those fields' numbers, read from types.go.
 */
function inlineFields(file: string, pkg: string): Record<string, number[]> {
  const found: Record<string, number[]> = {};
  let struct = '';
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const start = /^type (\w+) struct \{/.exec(line);
    if (start) struct = start[1]!;
    const m = /^\s+[\w.]+\s+`json:"" protobuf:"bytes,(\d+),/.exec(line);
    if (m && needed.has(`.${pkg}.${struct}`)) (found[`${pkg}.${struct}`] ??= []).push(Number(m[1]));
  }
  return found;
}
const inline = {
  ...inlineFields(path.join(roots['k8s.io/api/']!, 'core/v1/types.go'), 'k8s.io.api.core.v1'),
  ...inlineFields(path.join(roots['k8s.io/apimachinery/']!, 'pkg/apis/meta/v1/types.go'), META),
};

const target = path.join(
  path.dirname(fileURLToPath(import.meta.url)),
  '../src/kubelet/apis/pods/k8s/pod.json',
);
writeFileSync(
  target,
  JSON.stringify(
    {
      comment: `core/v1 Pod wire description from k8s.io/api ${API_VERSION}, written by scripts/gen-pod-proto.ts`,
      inline,
      ...out.toJSON(),
    },
    null,
    2,
  ) + '\n',
);
console.log(`${needed.size} messages -> ${target}`);
