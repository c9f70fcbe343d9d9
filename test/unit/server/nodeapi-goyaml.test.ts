import { expect } from 'chai';
import { sortKeysGoYaml, toGoYaml } from '../../../src/server/nodeapi/goyaml.js';

/**
 * JSON documents and the YAML sigs.k8s.io/yaml v1.6.0 (JSONToYAML, go-yaml v2.4.4) writes for them, as the
 * apiserver's YAML serializer writes /statusz and /flagz (taken from a Go program run against the module cache).
 */
const CASES: [json: string, yaml: string][] = [
  ['{"k":"plain words"}', 'k: plain words\n'],
  ['{"k":""}', 'k: ""\n'],
  ['{"k":"true"}', 'k: "true"\n'],
  ['{"k":"yes"}', 'k: "yes"\n'],
  ['{"k":"On"}', 'k: "On"\n'],
  ['{"k":"null"}', 'k: "null"\n'],
  ['{"k":"~"}', 'k: "~"\n'],
  ['{"k":"1"}', 'k: "1"\n'],
  ['{"k":"-1.5e3"}', 'k: "-1.5e3"\n'],
  ['{"k":".5"}', 'k: ".5"\n'],
  ['{"k":"0x1F"}', 'k: "0x1F"\n'],
  ['{"k":"08"}', 'k: "08"\n'],
  ['{"k":"1_000"}', 'k: "1_000"\n'],
  ['{"k":"1.37"}', 'k: "1.37"\n'],
  ['{"k":"1.37.2"}', 'k: 1.37.2\n'],
  ['{"k":"12:30"}', 'k: "12:30"\n'],
  ['{"k":"2024-01-02"}', 'k: "2024-01-02"\n'],
  ['{"k":"2024-02-30"}', 'k: 2024-02-30\n'],
  ['{"k":"2026-12-06T16:06:44Z"}', 'k: "2026-12-06T16:06:44Z"\n'],
  ['{"k":"2024-01-02 10:00:00"}', 'k: "2024-01-02 10:00:00"\n'],
  ['{"k":"[10.96.0.10]"}', "k: '[10.96.0.10]'\n"],
  ['{"k":"a: b"}', "k: 'a: b'\n"],
  ['{"k":"a:b"}', 'k: a:b\n'],
  ['{"k":"a #b"}', "k: 'a #b'\n"],
  ['{"k":"- a"}', "k: '- a'\n"],
  ['{"k":"-a"}', 'k: -a\n'],
  ['{"k":"it\'s"}', "k: it's\n"],
  ['{"k":"\'quoted\'"}', "k: '''quoted'''\n"],
  ['{"k":" leading"}', "k: ' leading'\n"],
  ['{"k":"trailing "}', "k: 'trailing '\n"],
  ['{"k":"tab\\there"}', 'k: "tab\\there"\n'],
  ['{"k":"é日本"}', 'k: é日本\n'],
  ['{"k":"😀"}', 'k: "\\U0001F600"\n'],
  ['{"k":"two\\nlines"}', 'k: |-\n  two\n  lines\n'],
  ['{"k":"ends\\n"}', 'k: |\n  ends\n'],
  ['{"k":"\\nstarts"}', 'k: |2-\n\n  starts\n'],
  ['{"k":"key=value:NoSchedule,other=:NoExecute"}', 'k: key=value:NoSchedule,other=:NoExecute\n'],
  [
    '{"k":"word word word word word word word word word word word word word word word word word word word word"}',
    'k: word word word word word word word word word word word word word word word word\n  word word word word\n',
  ],
  [
    '{"k":"only the following media types are accepted: application/json, application/yaml, text/plain"}',
    "k: 'only the following media types are accepted: application/json, application/yaml,\n  text/plain'\n",
  ],
  [
    '{"k":"\\"double\\" word word word word word word word word word word word word word word word word word word"}',
    'k: \'"double" word word word word word word word word word word word word word word\n  word word word word\'\n',
  ],
  [
    '{"k":"tab\\tword word word word word word word word word word word word word word word word word word word"}',
    'k: "tab\\tword word word word word word word word word word word word word word word\n  word word word word"\n',
  ],
  [
    '{"m":{},"l":[],"n":{"deep":{"deeper":"x"}},"s":["a","b: c",""],"i":406,"b":true,"z":null}',
    'b: true\ni: 406\nl: []\nm: {}\n"n":\n  deep:\n    deeper: x\ns:\n- a\n- \'b: c\'\n- ""\nz: null\n',
  ],
  [
    '{"a10":1,"a9":2,"a09":3,"A":4,"_x":5,"b":6,"kube-api-qps":7,"1":8}',
    '_x: 5\n"1": 8\nA: 4\na9: 2\na09: 3\na10: 1\nb: 6\nkube-api-qps: 7\n',
  ],
];

describe('node API: YAML as go-yaml v2 writes it', () => {
  it('writes every document byte for byte as sigs.k8s.io/yaml does', () => {
    for (const [json, yaml] of CASES) expect(toGoYaml(JSON.parse(json)), json).to.equal(yaml);
  });

  it("sorts keys in go-yaml's order: digit runs as numbers, letters before other characters", () => {
    expect(sortKeysGoYaml(['a10', 'a9', 'b', 'A', '_x', '1', 'a09'])).to.deep.equal([
      '_x',
      '1',
      'A',
      'a9',
      'a09',
      'a10',
      'b',
    ]);
  });
});
