import { describe, expect, it } from 'vitest';
import { Claims, describeClaim, type Claim } from '../../src/concurrency/index.js';
import { deriveCommandClaim } from '../../src/sandbox/command-policy/command-claims.js';

/*
 * The bash claim derived from the command (docs/bash-claims.md), as a table: read-only commands are
 * shared reads of their operands (or of the working directory), known path effects claim their
 * paths, pipelines and lists take the union, and anything uncertain is global. Workspace /w.
 */

const W = { workspace: '/w', cwd: '/w' };
const reads = (...paths: string[]): Claim => Claims.shared(paths);
const writes = (...paths: string[]): Claim => Claims.paths(paths);
const GLOBAL = Claims.global();
const UNKNOWN_READ = Claims.shared();

// A read of /w covers the reads below it, so the union keeps only the outermost paths. With no
// path named, `ls`, `rg`, `grep -r` read the working directory and `cat`, `sort`, `jq` read stdin;
// a command that reads no file at all is a shared read of the working directory. `git diff`
// rewrites the index and `sed -i` writes a temporary file beside its target (both seen under strace).
const CASES: [command: string, claim: Claim][] = [
  // read-only programs and subcommands, with and without path operands
  ['ls', reads('/w')],
  ['ls -la src', reads('/w/src')],
  ['cat a.ts b.ts', reads('/w/a.ts', '/w/b.ts')],
  ['rg -n TODO src', reads('/w/src')],
  ['rg TODO', reads('/w')],
  ['grep -rn foo src lib', reads('/w/lib', '/w/src')],
  ['grep -e foo -r docs', reads('/w/docs')],
  ['head -n 20 README.md', reads('/w/README.md')],
  ['tail -f -n 5 log.txt', reads('/w/log.txt')],
  ['wc -l src/*.ts', reads('/w/src')],
  ['find src -name "*.ts" -type f', reads('/w/src')],
  ['git status', reads('/w')],
  ['git log --oneline -5', reads('/w')],
  ['git diff HEAD~1 -- src', writes('/w')],
  ['git show HEAD:README.md', reads('/w')],
  ['git branch --show-current', reads('/w')],
  ['git --no-pager log -p -1', reads('/w')],
  ['pwd', reads('/w')],
  ['echo "rm -rf /"', reads('/w')],
  ['rg TODO | wc -l', reads('/w')],
  ['git status && git diff --stat', writes('/w')],
  ['ls ~', reads('/w')],
  ['cat ~/notes.md', reads('/w/notes.md')],
  ['LANG=C sort data.csv', reads('/w/data.csv')],
  ['time ls src', reads('/w/src')],
  ['stat /etc/hosts', reads('/etc/hosts')],
  ["awk '{print $1}' access.log", reads('/w/access.log')],
  ["sed -n '1,20p' a.ts", reads('/w/a.ts')],
  ['[ -f package.json ] && cat package.json', reads('/w')],
  // pipelines and lists: the union
  ['cat package.json | jq .version', reads('/w/package.json')],
  ['ls src && git status', reads('/w')],
  ['grep -r TODO src | sort | uniq -c | head', reads('/w/src')],
  ['cat $(git ls-files)', UNKNOWN_READ],
  ['cat "$FILE"', UNKNOWN_READ],
  // known path effects
  ['echo hi > out.txt', writes('/w/out.txt')],
  ['echo hi >> logs/run.log 2>/dev/null', writes('/w/logs/run.log')],
  ['mkdir build', writes('/w/build')],
  ['mkdir -p build/out/x', writes('/w/build')],
  ['touch a b', writes('/w/a', '/w/b')],
  ['rm -rf dist', writes('/w/dist')],
  ['rm -f /tmp/x.lock', writes('/tmp/x.lock')],
  ['mv a.txt b.txt', writes('/w/a.txt', '/w/b.txt')],
  ['cp src/a.ts /tmp/a.ts', writes('/tmp/a.ts', '/w/src/a.ts')],
  ['cat a | tee b', writes('/w/a', '/w/b')],
  ["sed -i 's/a/b/' x.ts", writes('/w')],
  ["sed -i 's/a/b/' src/x.ts", writes('/w/src')],
  ['chmod +x scripts/run.sh', writes('/w/scripts/run.sh')],
  ['ls > files.txt && wc -l files.txt', writes('/w')],
  ['cat <<EOF > notes.md\n# Notes\nEOF', writes('/w/notes.md')],
  ['sort < in.txt > out.txt', writes('/w/in.txt', '/w/out.txt')],
  ['cat "$X" > out.txt', GLOBAL],
  ['rm -rf "$DIR"', GLOBAL],
  // anything else, or uncertain: global
  ['npm test', GLOBAL],
  ['cd src && ls', GLOBAL],
  ['sort -o out.txt in.txt', GLOBAL],
  ['rg --pre ./decode TODO', GLOBAL],
  ['git push', GLOBAL],
  ['git -C other status', GLOBAL],
  ['git -c core.pager=cat log', GLOBAL],
  ['git log --output=log.txt', GLOBAL],
  ['git stash', GLOBAL],
  ['git branch new-feature', GLOBAL],
  ['find . -name "*.tmp" -delete', GLOBAL],
  ['find . -exec cat {} +', GLOBAL],
  ['awk \'{print > "out"}\' f', GLOBAL],
  ["sed 's/x/y/w out.txt' f", GLOBAL],
  ['f() { ls; }; f', GLOBAL],
  ['for f in *.ts; do wc -l "$f"; done', GLOBAL],
  ['X=1 ls', GLOBAL],
  ['env ls', GLOBAL],
  ['sudo ls', GLOBAL],
  ['bash -c "ls"', GLOBAL],
  ['xargs cat < list.txt', GLOBAL],
  ['echo "unterminated', GLOBAL],
  ['ls ~other', GLOBAL],
  ['cat <<EOF > out.txt\n$(rm -rf .)\nEOF', GLOBAL],
  ['uniq in.txt out.txt', GLOBAL],
];

describe('the bash claim derived from the command', () => {
  it.each(CASES)('%j → %o', (command, claim) => {
    expect(deriveCommandClaim(command, W)).toEqual(claim);
  });

  it('resolves paths in the working directory the command runs in', () => {
    const sub = { workspace: '/w', cwd: '/w/sub' };
    expect(deriveCommandClaim('ls', sub)).toEqual(reads('/w/sub'));
    expect(deriveCommandClaim('cat ../a.ts', sub)).toEqual(reads('/w/a.ts'));
    expect(deriveCommandClaim('git status', sub)).toEqual(reads('/w'));
  });

  it('labels the claim for the schedule explanation', () => {
    expect(describeClaim(deriveCommandClaim('rg -n TODO src', W))).toBe('shared reads [/w/src]');
    expect(describeClaim(deriveCommandClaim('mkdir -p out && touch out/x', W))).toBe('paths [/w/out]');
    expect(describeClaim(deriveCommandClaim('npm test', W))).toBe('global');
  });
});
