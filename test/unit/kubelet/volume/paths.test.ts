import { expect } from 'chai';
import {
  baseName,
  cleanPath,
  dirName,
  joinPath,
  selfAndAncestors,
} from '../../../../src/kubelet/volume/paths.js';

describe('volume paths (Go path semantics)', () => {
  const clean: [string, string][] = [
    ['', '.'],
    ['a/b/../c', 'a/c'],
    ['./a//b/', 'a/b'],
    ['/../a', '/a'],
    ['../../a', '../../a'],
    ['a/../..', '..'],
    ['/', '/'],
    ['.', '.'],
  ];
  for (const [p, want] of clean)
    it(`cleanPath(${JSON.stringify(p)}) = ${want}`, () => expect(cleanPath(p)).to.equal(want));

  it('joins, splits and lists ancestors', () => {
    expect(joinPath('/vol', '..data', 'a/b')).to.equal('/vol/..data/a/b');
    expect(joinPath('', '')).to.equal('');
    expect(joinPath('a', '', 'b/')).to.equal('a/b');
    expect(dirName('/a/b')).to.equal('/a');
    expect(dirName('/a')).to.equal('/');
    expect(dirName('a')).to.equal('.');
    expect(baseName('/a/b/')).to.equal('b');
    expect(baseName('/')).to.equal('/');
    expect(selfAndAncestors('a/b/c')).to.deep.equal(['a/b/c', 'a/b', 'a']);
    expect(selfAndAncestors('a')).to.deep.equal(['a']);
  });
});
