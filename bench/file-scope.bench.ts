/**
 * What race-free file tools cost, and what they buy. Three ways to read a file 3 directories
 * deep in a workspace: the descriptor walk the file tools use (each component opened through
 * /proc/self/fd with O_NOFOLLOW), the check-then-use they replaced (realpath, compare, then
 * readFile by path) as the baseline, and the other design that closes the race (the I/O done
 * inside bubblewrap, `cat` in a sandbox per call). Then both readers against the racing
 * symlink swapper of test/sandbox: how often each one reads the secret outside.
 */

import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { readFile, realpath } from 'node:fs/promises';
import { setPriority, tmpdir } from 'node:os';
import { join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCommand } from '../src/sandbox/run-command.js';
import { WorkspaceDir } from '../src/sandbox/workspace-dir.js';
import { readWorkspaceFile } from '../src/sandbox/workspace-files.js';
import type { BenchFigure, Benchmark } from './types.js';

const SECRET = 'SWY-bench-outside-secret';
const RACE_ATTEMPTS = 3_000;

/** The file tools' scope check before this change: resolve, compare, then read by path. */
async function checkThenRead(workspace: string, path: string): Promise<Buffer> {
  const real = await realpath(resolve(workspace, path));
  if (real !== workspace && !real.startsWith(workspace + sep)) throw new Error('outside the workspace');
  return readFile(real);
}

const readByDescriptor = (workspace: string, path: string): Promise<Buffer> =>
  WorkspaceDir.with(workspace, undefined, (dir) => readWorkspaceFile(dir, path));

async function microsPerRead(read: () => Promise<unknown>, calls: number): Promise<number> {
  for (let i = 0; i < Math.min(50, calls); i++) await read();
  let best = Infinity;
  for (let round = 0; round < 5; round++) {
    const started = process.hrtime.bigint();
    for (let i = 0; i < calls; i++) await read();
    best = Math.min(best, Number(process.hrtime.bigint() - started) / 1000 / calls);
  }
  return best;
}

/** Reads through the swapped path `d/t` while the swapper runs; how many returned the secret. */
async function raceWins(
  workspace: string,
  read: (workspace: string, path: string) => Promise<Buffer>,
): Promise<number> {
  let wins = 0;
  for (let i = 0; i < RACE_ATTEMPTS; i++) {
    const bytes = await read(workspace, 'd/t').catch(() => undefined);
    if (bytes?.toString('utf8').includes(SECRET)) wins += 1;
  }
  return wins;
}

const fileScopeBenchmark: Benchmark = async () => {
  const base = await realpath(mkdtempSync(join(tmpdir(), 'switchyard-bench-scope-')));
  // A server running as root runs sandboxed commands as an unprivileged user, who must reach the workspace.
  chmodSync(base, 0o755);
  try {
    const workspace = join(base, 'w');
    mkdirSync(join(workspace, 'a', 'b', 'c'), { recursive: true });
    writeFileSync(join(workspace, 'a', 'b', 'c', 'file.ts'), 'export const x = 1;\n'.repeat(50));
    const deep = 'a/b/c/file.ts';
    const walk = await microsPerRead(() => readByDescriptor(workspace, deep), 2_000);
    const check = await microsPerRead(() => checkThenRead(workspace, deep), 2_000);
    const sandboxed = await microsPerRead(
      () =>
        runCommand({
          command: `cat ${deep}`,
          cwd: workspace,
          workspace,
          timeoutMs: 10_000,
          maxOutputBytes: 1 << 20,
          network: false,
          backend: 'bwrap',
        }),
      10,
    );

    // The race arena of test/sandbox/symlink-race.test.ts: d swaps between d.real and a link outside.
    const outside = join(base, 'outside');
    mkdirSync(join(workspace, 'd.real'));
    mkdirSync(outside);
    writeFileSync(join(workspace, 'd.real', 't'), 'inside\n');
    writeFileSync(join(outside, 't'), `${SECRET}\n`);
    symlinkSync(outside, join(workspace, 'd.link'));
    const swapper = spawn(process.execPath, [
      fileURLToPath(new URL('../test/sandbox/fixtures/symlink-swapper.mjs', import.meta.url)),
      workspace,
    ]);
    await new Promise<void>((ready) => swapper.stdout.once('data', () => ready()));
    setPriority(swapper.pid ?? 0, 19);
    const oldWins = await raceWins(workspace, checkThenRead);
    const newWins = await raceWins(workspace, readByDescriptor);
    swapper.kill('SIGKILL');
    return [
      {
        figure: 'file tools: read 3 dirs deep, descriptor walk (baseline: check then read by path)',
        value: walk,
        unit: 'µs/call',
        baseline: check,
        ratio: walk / check,
      },
      {
        figure: 'file tools: read in a bubblewrap sandbox per call (baseline: descriptor walk)',
        value: sandboxed,
        unit: 'µs/call',
        baseline: walk,
        ratio: sandboxed / walk,
      },
      {
        figure: `file tools: secret reads out of ${RACE_ATTEMPTS} against the symlink swapper, descriptor walk (baseline: check then read)`,
        value: newWins,
        unit: 'wins',
        baseline: oldWins,
        target: '0',
      },
    ] satisfies BenchFigure[];
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
};

export default fileScopeBenchmark;
