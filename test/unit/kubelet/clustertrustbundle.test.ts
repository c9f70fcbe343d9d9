import { expect } from 'chai';
import { matchesLabelSelector } from '../../../src/api/labelselector.js';
import {
  normalizeTrustAnchors,
  trustAnchorsFor,
  trustBundleQuery,
  type ClusterTrustBundle,
} from '../../../src/kubelet/clustertrustbundle.js';

const pem = (b64: string, type = 'CERTIFICATE'): string =>
  `-----BEGIN ${type}-----\n${b64}\n-----END ${type}-----\n`;
const ctb = (
  name: string,
  signerName: string | undefined,
  labels: Record<string, string>,
  trustBundle: string,
) =>
  ({
    metadata: { name, labels },
    spec: { ...(signerName ? { signerName } : {}), trustBundle },
  }) as ClusterTrustBundle;

describe('ClusterTrustBundle projection (kubelet clustertrustbundle manager)', () => {
  it('de-duplicates anchors across bundles, rewrites them as CERTIFICATE blocks in one stable order', () => {
    const a = 'AAECAwQF';
    const b = 'BgcICQoL';
    const long = Buffer.alloc(100, 7).toString('base64');
    const out = normalizeTrustAnchors([
      pem(b) + pem(a),
      `junk\n${pem(a, 'TRUSTED CERTIFICATE')}` + pem(long),
    ]);
    const blocks = out.split('-----END CERTIFICATE-----\n').filter((x) => x !== '');
    expect(blocks).to.have.length(3);
    expect(out).to.equal(normalizeTrustAnchors([pem(long), pem(a), pem(b)]));
    // Lines of 64 base64 characters, as Go's pem.Encode writes them.
    expect(out.split('\n').every((l) => l.length <= 64)).to.equal(true);
    expect(normalizeTrustAnchors([])).to.equal('');
  });

  it('selects by name, or by signer and label selector (unset: nothing, empty: everything)', () => {
    const all = [
      ctb('one', 'example.com/s', { env: 'prod' }, pem('AAAA')),
      ctb('two', 'example.com/s', { env: 'dev' }, pem('BBBB')),
      ctb('three', 'example.com/other', { env: 'prod' }, pem('CCCC')),
    ];
    expect(trustAnchorsFor({ name: 'two', path: 'p' }, [all[1]!])).to.deep.equal({
      ok: true,
      pem: pem('BBBB'),
    });
    const bySigner = (labelSelector: object | null | undefined, optional?: boolean) =>
      trustAnchorsFor({ signerName: 'example.com/s', labelSelector, optional, path: 'p' } as never, all);
    expect(bySigner({ matchLabels: { env: 'prod' } })).to.deep.equal({ ok: true, pem: pem('AAAA') });
    expect(bySigner({})).to.deep.equal({ ok: true, pem: normalizeTrustAnchors([pem('AAAA'), pem('BBBB')]) });
    expect(bySigner(undefined)).to.deep.equal({
      ok: false,
      error: 'combination of signerName and labelSelector matched zero ClusterTrustBundles',
    });
    expect(bySigner(undefined, true)).to.deep.equal({ ok: true, pem: '' });
  });

  it('words a missing named bundle and a source with neither name nor signer as the kubelet does', () => {
    expect(trustAnchorsFor({ name: 'gone', path: 'p' }, [])).to.deep.equal({
      ok: false,
      error: 'while getting ClusterTrustBundle: clustertrustbundles.certificates.k8s.io "gone" not found',
    });
    expect(trustAnchorsFor({ name: 'gone', optional: true, path: 'p' }, [])).to.deep.equal({
      ok: true,
      pem: '',
    });
    expect(trustBundleQuery({ path: 'p' })).to.equal(undefined);
    expect(trustAnchorsFor({ path: 'p' }, [])).to.deep.equal({
      ok: false,
      error: 'ClusterTrustBundle projection requires either name or signerName to be set',
    });
  });
});

describe('label selectors', () => {
  it('matches matchLabels and every operator; an unknown operator matches nothing', () => {
    const labels = { a: '1', b: '2' };
    expect(matchesLabelSelector({}, labels)).to.equal(true);
    expect(matchesLabelSelector({ matchLabels: { a: '1' } }, labels)).to.equal(true);
    expect(matchesLabelSelector({ matchLabels: { a: '2' } }, labels)).to.equal(false);
    const expr = (operator: string, key: string, values?: string[]) =>
      matchesLabelSelector({ matchExpressions: [{ key, operator, ...(values ? { values } : {}) }] }, labels);
    expect(expr('In', 'a', ['1', '3'])).to.equal(true);
    expect(expr('In', 'c', ['1'])).to.equal(false);
    expect(expr('NotIn', 'a', ['1'])).to.equal(false);
    expect(expr('NotIn', 'c', ['1'])).to.equal(true);
    expect(expr('Exists', 'b')).to.equal(true);
    expect(expr('DoesNotExist', 'b')).to.equal(false);
    expect(expr('Gt', 'a', ['0'])).to.equal(false);
  });
});
