import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const OCI_SH = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../scripts/lib/oci.sh');

interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  annotations?: Record<string, string>;
}

/** Runs bash with oci.sh sourced, in a scratch dir holding rootfs-base/ and rootfs-upper/. */
function runOci(dir: string, body: string): void {
  const script = `set -euo pipefail
source "${OCI_SH}"
cd "${dir}"
mkdir -p rootfs-base/bin rootfs-upper
echo base >rootfs-base/bin/tool
echo '{"image": "upper.jpg"}' >rootfs-upper/data.json
${body}`;
  execFileSync('bash', ['-c', script], { stdio: ['ignore', 'ignore', 'pipe'] });
}

function member(tar: string, name: string): Buffer {
  return execFileSync('tar', ['-xOf', tar, name], { maxBuffer: 64 * 1024 * 1024 });
}

function blob(tar: string, digest: string): Buffer {
  return member(tar, `blobs/sha256/${digest.replace(/^sha256:/, '')}`);
}

function sha256(b: Buffer): string {
  return `sha256:${createHash('sha256').update(b).digest('hex')}`;
}

function readImage(tar: string): {
  index: { manifests: Descriptor[] };
  manifest: { layers: Descriptor[]; config: Descriptor };
  config: {
    rootfs: { diff_ids: string[] };
    history: { created_by: string }[];
    config: Record<string, unknown>;
  };
} {
  const index = JSON.parse(member(tar, 'index.json').toString()) as { manifests: Descriptor[] };
  const manifest = JSON.parse(blob(tar, index.manifests[0]!.digest).toString()) as {
    layers: Descriptor[];
    config: Descriptor;
  };
  const config = JSON.parse(blob(tar, manifest.config.digest).toString()) as {
    rootfs: { diff_ids: string[] };
    history: { created_by: string }[];
    config: Record<string, unknown>;
  };
  return { index, manifest, config };
}

describe('scripts/lib/oci.sh: OCI image layout tars', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'oci-test-'));
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('writes a one-layer image under every name, its blobs matching their digests', () => {
    runOci(
      dir,
      `read -r diff digest size < <(make_layer rootfs-base layer-base)
LAYER_FILE=layer-base.tar.gz
OCI_CREATED_BY=test build_image one.tar reg.example/one:2 "$digest" "$size" "$diff" '"Cmd":["sh"]' reg.example/one:1`,
    );
    const tar = path.join(dir, 'one.tar');
    const { index, manifest, config } = readImage(tar);
    expect(index.manifests.map((m) => m.annotations?.['io.containerd.image.name'])).to.deep.equal([
      'reg.example/one:2',
      'reg.example/one:1',
    ]);
    expect(manifest.layers).to.have.length(1);
    const layer = blob(tar, manifest.layers[0]!.digest);
    expect(sha256(layer)).to.equal(manifest.layers[0]!.digest);
    expect(layer.length).to.equal(manifest.layers[0]!.size);
    expect(config.rootfs.diff_ids).to.deep.equal([sha256(readFileSync(path.join(dir, 'layer-base.tar')))]);
    expect(config.history).to.deep.equal([{ created_by: 'test' }]);
    expect(config.config['Cmd']).to.deep.equal(['sh']);
  });

  it('stacks OCI_UPPER_LAYERS over the base layer, in order, one history entry per layer', () => {
    runOci(
      dir,
      `read -r diff digest size < <(make_layer rootfs-base layer-base)
read -r u_diff u_digest u_size < <(make_layer rootfs-upper layer-upper)
LAYER_FILE=layer-base.tar.gz
OCI_UPPER_LAYERS=("layer-upper.tar.gz $u_digest $u_size $u_diff")
build_image two.tar reg.example/two:1 "$digest" "$size" "$diff" '"Entrypoint":["/bin/tool"]'
OCI_UPPER_LAYERS=()
build_image base.tar reg.example/base:1 "$digest" "$size" "$diff" '"Entrypoint":["/bin/tool"]'`,
    );
    const two = readImage(path.join(dir, 'two.tar'));
    const base = readImage(path.join(dir, 'base.tar'));
    expect(two.manifest.layers).to.have.length(2);
    // The base layer is the same blob as the one-layer image's: containerd stores it once.
    expect(two.manifest.layers[0]).to.deep.equal(base.manifest.layers[0]);
    const upper = blob(path.join(dir, 'two.tar'), two.manifest.layers[1]!.digest);
    expect(sha256(upper)).to.equal(two.manifest.layers[1]!.digest);
    expect(two.config.rootfs.diff_ids).to.deep.equal([
      sha256(readFileSync(path.join(dir, 'layer-base.tar'))),
      sha256(readFileSync(path.join(dir, 'layer-upper.tar'))),
    ]);
    expect(two.config.history).to.have.length(2);
    const files = execFileSync('tar', ['-tzf', '-'], { input: upper }).toString().split('\n').filter(Boolean);
    expect(files).to.deep.equal(['data.json']);
  });

  it('gives the same bytes for the same inputs', () => {
    const build = `read -r diff digest size < <(make_layer rootfs-base layer-base)
LAYER_FILE=layer-base.tar.gz
build_image "$OUT" reg.example/same:1 "$digest" "$size" "$diff" '"Cmd":["sh"]'`;
    runOci(dir, `OUT=a.tar\n${build}`);
    runOci(dir, `OUT=b.tar\n${build}`);
    expect(sha256(readFileSync(path.join(dir, 'a.tar')))).to.equal(
      sha256(readFileSync(path.join(dir, 'b.tar'))),
    );
  });
});
