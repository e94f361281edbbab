import { execa } from 'execa';
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Claim } from '../../src/concurrency/index.js';
import { runCommand } from '../../src/sandbox/run-command.js';
import { bashClaim } from '../../src/tools/builtins/bash.js';
import { hasBwrap, hasStrace } from '../support/real-parts.js';

/*
 * The derived bash claims against reality: each command of this corpus runs inside bubblewrap,
 * with the bash tool's environment, under `strace -f -e trace=%file`. Every path it created,
 * removed, renamed or opened for writing must lie inside the paths its claim names, and a
 * command claimed as a read must write nothing. Writes to the sandbox's private /tmp and to
 * /dev/null cannot reach another call and are not counted.
 */

const parts = (await hasBwrap('the bash claims against strace')) && hasStrace('the bash claims against strace');

const CLAIMS_CORPUS: readonly string[] = [
  // shared reads
  'ls',
  'ls -la src',
  'cat src/a.ts src/b.ts',
  'grep -rn TODO src',
  'head -n 5 README.md',
  'wc -l src/*.ts',
  'find src -name "*.ts"',
  'git status',
  'git status --short',
  'git log --oneline -3',
  'git diff --stat',
  'git show --stat HEAD',
  'git branch --show-current',
  'cat package.json | grep name',
  'pwd',
  'echo hi',
  'sort data.csv | uniq -c',
  "sed -n '1,2p' README.md",
  "awk '{print $1}' data.csv",
  'stat README.md',
  '[ -f package.json ] && cat package.json',
  'cat $(git ls-files src)',
  // known path effects
  'echo hi > out.txt',
  'echo more >> logs/run.log',
  'mkdir build',
  'mkdir -p dist/x/y',
  'touch a b',
  'rm -f notes.txt',
  'rm -rf logs',
  'mv README.md README.txt',
  'cp src/a.ts src/c.ts',
  'cat src/a.ts | tee copy.ts',
  "sed -i 's/TODO/DONE/' src/b.ts",
  'chmod +x src/a.ts',
  'ls > files.txt && wc -l files.txt',
  'cat <<EOF > notes.md\n# Notes\nEOF',
  'sort < data.csv > sorted.csv',
];

let template: string;
const trash: string[] = [];

beforeAll(async () => {
  if (!parts) return;
  template = await mkdtemp(path.join(tmpdir(), 'switchyard-claims-'));
  trash.push(template);
  await mkdir(path.join(template, 'src'));
  await mkdir(path.join(template, 'logs'));
  await writeFile(path.join(template, 'src/a.ts'), 'export const a = 1; // TODO\n');
  await writeFile(path.join(template, 'src/b.ts'), 'export const b = 2; // TODO\n');
  await writeFile(path.join(template, 'README.md'), '# Project\n\nRead me.\n');
  await writeFile(path.join(template, 'package.json'), '{ "name": "project" }\n');
  await writeFile(path.join(template, 'data.csv'), 'b,2\na,1\nb,2\n');
  await writeFile(path.join(template, 'notes.txt'), 'notes\n');
  await writeFile(path.join(template, 'logs/run.log'), 'started\n');
  const git = (...args: string[]) =>
    execa('git', args, {
      cwd: template,
      env: { GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' },
    });
  await git('init', '-q');
  await git('add', '.');
  await git('commit', '-qm', 'start');
  await writeFile(path.join(template, 'src/b.ts'), 'export const b = 3; // TODO\n');
});

afterAll(async () => {
  await Promise.all(trash.map((dir) => rm(dir, { recursive: true, force: true })));
});

describe.skipIf(!parts)('bash claims hold under strace', () => {
  it.each(CLAIMS_CORPUS)('%j', async (command) => {
    const workspace = await mkdtemp(path.join(tmpdir(), 'switchyard-claims-run-'));
    trash.push(workspace);
    await cp(template, workspace, { recursive: true });
    const claim = bashClaim({ command }, { workspace, sessionId: 's' });
    expect(claim, 'the corpus holds commands whose claim is narrower than global').not.toEqual({
      kind: 'exclusive',
      scope: { kind: 'global' },
    });

    const writes = await writesUnderStrace(workspace, command);
    const outside = writes.filter((written) => !withinClaim(claim, written));
    expect(outside, `claim ${JSON.stringify(claim)}`).toEqual([]);
  });
});

/** Runs `command` as the bash tool would (the production sandbox, HOME and cwd the workspace) and returns the paths it wrote. */
async function writesUnderStrace(workspace: string, command: string): Promise<string[]> {
  // A root server runs commands as the workspace's owner; the files are theirs, as the file tools make them.
  if (process.getuid?.() === 0) await execa('chown', ['-R', '65534:65534', workspace]);
  // strace writes one file per process into the sandbox's private /tmp; the outer shell prints them once it is done.
  const script =
    'strace -f -ff -qq -y -e trace=%file,fchdir -o /tmp/trace bash -c "$CMD" >/dev/null 2>&1; for f in /tmp/trace.*; do echo "== $f"; cat "$f"; done';
  const result = await runCommand({
    command: script,
    cwd: workspace,
    workspace,
    env: { CMD: command, GIT_OPTIONAL_LOCKS: '0' },
    backend: 'bwrap',
    network: false,
    timeoutMs: 60_000,
    maxOutputBytes: 64 * 1024 * 1024,
  });
  expect(result.exitCode, result.output).toBe(0);
  return writtenPaths(result.stdout, workspace).filter((written) => !isPrivate(written, workspace));
}

/** The sandbox's own /tmp, and devices that are not files anyone else reads. */
function isPrivate(written: string, workspace: string): boolean {
  if (written === workspace || written.startsWith(`${workspace}/`)) return false;
  return written.startsWith('/tmp/') || /^\/dev\/(?:null|tty|pts\/)/.test(written) || written.startsWith('/proc/');
}

const WRITE_FLAGS = /O_WRONLY|O_RDWR|O_CREAT|O_TRUNC|O_APPEND/;
/** Syscalls that change the file system, and which of their path arguments they change. */
const MUTATING: Readonly<Record<string, 'all' | 'last'>> = {
  mkdir: 'all',
  mkdirat: 'all',
  rmdir: 'all',
  unlink: 'all',
  unlinkat: 'all',
  truncate: 'all',
  chmod: 'all',
  fchmodat: 'all',
  chown: 'all',
  lchown: 'all',
  fchownat: 'all',
  utime: 'all',
  utimes: 'all',
  utimensat: 'all',
  mknod: 'all',
  mknodat: 'all',
  rename: 'all',
  renameat: 'all',
  renameat2: 'all',
  link: 'last',
  linkat: 'last',
  symlink: 'last',
  symlinkat: 'last',
  setxattr: 'all',
  lsetxattr: 'all',
  removexattr: 'all',
  lremovexattr: 'all',
  creat: 'all',
};

/** Paths a set of `strace -ff -y` logs shows written, resolved against each process's working directory. */
function writtenPaths(traces: string, workspace: string): string[] {
  const written: string[] = [];
  let cwd = workspace;
  for (const line of traces.split('\n')) {
    // Each process's log starts afresh in the workspace (no corpus command changes directory before it forks).
    if (line.startsWith('== ')) cwd = workspace;
    const call = /^(\w+)\((.*)\)\s+=\s+(-?\d+)/.exec(line);
    if (!call) continue;
    const [, name = '', args = '', result = '-1'] = call;
    if (Number(result) < 0) continue;
    const dirfd = /^(?:AT_FDCWD|\d+)<([^>]*)>/.exec(args)?.[1];
    const strings = [...args.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((m) => m[1] ?? '');
    const base = dirfd ?? cwd;
    if (name === 'chdir' && strings[0] !== undefined) cwd = path.resolve(cwd, strings[0]);
    else if (name === 'fchdir') cwd = /^\d+<([^>]*)>/.exec(args)?.[1] ?? cwd;
    else if (
      (name === 'open' || name === 'openat' || name === 'openat2') &&
      WRITE_FLAGS.test(args) &&
      strings[0] !== undefined
    ) {
      written.push(path.resolve(base, strings[0]));
    } else if (MUTATING[name] !== undefined) {
      const targets = MUTATING[name] === 'last' ? strings.slice(-1) : strings;
      written.push(...targets.filter((target) => target !== '').map((target) => path.resolve(base, target)));
    }
  }
  return written;
}

function withinClaim(claim: Claim, written: string): boolean {
  if (claim.kind === 'shared') return false;
  if (claim.scope.kind === 'global') return true;
  if (claim.scope.kind !== 'paths') return false;
  return claim.scope.paths.some((claimed) => written === claimed || written.startsWith(`${claimed}/`));
}
