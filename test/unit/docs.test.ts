// The architecture picture names real places: every repository path in docs/ARCHITECTURE.md exists, so a
// change that moves a concept and forgets the picture fails here.
import { expect } from 'chai';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * The repository paths a Markdown text names in backquotes: spans under a known top folder, and bare file names
 * (`manager.ts`), which are read in the folder named last before them in the same paragraph, list item or table
 * row (at the root when none is). Other spans (commands, identifiers) are not paths.
 */
export function namedPaths(markdown: string): string[] {
  const top = /^(src|test|scripts|docs|bench|manifests|crds)\/|^\.\.\/shared\//;
  const paths = new Set<string>();
  let folder = '';
  for (const line of markdown.split('\n')) {
    if (/^\s*$|^\s*(- |\|)/.test(line)) folder = '';
    for (const [, span] of line.matchAll(/`([^`\s]+)`/g)) {
      if (top.test(span!)) {
        paths.add(span!);
        folder = span!.endsWith('/') ? span! : span!.slice(0, span!.lastIndexOf('/') + 1);
      } else if (/^[\w.-]+\.(md|json|ts|yaml|sh)$/.test(span!)) {
        paths.add(folder + span!);
      }
    }
  }
  return [...paths];
}

describe('docs/ARCHITECTURE.md', () => {
  const text = readFileSync(join(repo, 'docs/ARCHITECTURE.md'), 'utf8');

  it('finds the paths it should check (and not a span that is not a path)', () => {
    expect(
      namedPaths('`README.md` `src/a/b.ts` (`c.ts`), `docs/`\n`d.md`, `npm test`, `NodeWatches`\n\n`e.ts`'),
    ).to.deep.equal(['README.md', 'src/a/b.ts', 'src/a/c.ts', 'docs/', 'docs/d.md', 'e.ts']);
  });

  it('names only paths that exist', () => {
    const paths = namedPaths(text);
    expect(paths.length, 'paths named').to.be.above(40);
    expect(paths.filter((p) => !existsSync(join(repo, p)))).to.deep.equal([]);
  });

  it('is linked from the top of README', () => {
    const head = readFileSync(join(repo, 'README.md'), 'utf8').split('\n').slice(0, 30).join('\n');
    expect(head).to.contain('docs/ARCHITECTURE.md');
  });
});
