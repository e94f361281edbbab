/*
 * `npm start`, the main job, stopped the ways supervisors and terminals stop it, with runs in
 * flight: SIGTERM to npm alone (docker stop, systemd KillMode=process), SIGTERM to the whole
 * process group (systemd's default), SIGINT to the group (Ctrl-C), SIGTERM to the server. Each
 * time the server itself gets the signal and stops gracefully (the runs finish, "stopped" is
 * logged, exit 0), and npm exits after it, with its code; no wrapper relays the signal late or
 * kills the server mid-way, and no server is left behind.
 */
import { spawnSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { clientOf, servedUrl, spawnServe } from '../cli/serve-child.js';
import { tempDirs } from '../temp-dirs.js';

const TIMEOUT = 600_000;
const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const tempDir = tempDirs();
const RUNS = 3;

beforeAll(() => {
  // `npm start` runs the compiled server: build it from the sources under test.
  const build = spawnSync(process.execPath, ['scripts/build.mjs'], { cwd: repoRoot, encoding: 'utf8' });
  expect(build.status, build.stderr).toBe(0);
}, TIMEOUT);

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A config whose model answers each run after a pause, so runs are in flight when the signal comes. */
async function slowConfig(dir: string): Promise<string> {
  const script = join(dir, 'slow.json');
  await writeFile(script, JSON.stringify([{ text: 'finished', delayMs: 2_000 }]));
  const config = join(dir, 'switchyard.toml');
  const workspaces = await tempDir();
  await writeFile(config, `[execution]\ndefault_model = "slow"\n[models.slow]\nkind = "scripted"\nscript = ${JSON.stringify(script)}\n[sandbox]\nworkspace_root = ${JSON.stringify(workspaces)}\n`);
  return config;
}

type Target = 'npm' | 'group' | 'server';

describe('npm start stopped by a signal, with runs in flight', { timeout: TIMEOUT }, () => {
  it.each([
    ['SIGTERM to npm alone (docker stop, systemd KillMode=process)', 'SIGTERM', 'npm'],
    ['SIGTERM to the process group (systemd)', 'SIGTERM', 'group'],
    ['SIGINT to the process group (Ctrl-C in a terminal)', 'SIGINT', 'group'],
    ['SIGTERM to the server itself', 'SIGTERM', 'server'],
  ] as [string, NodeJS.Signals, Target][])('%s: the server stops gracefully, npm exits 0 after it', async (_how, signal, target) => {
    const dir = await tempDir();
    const dataDir = join(dir, 'data');
    // detached: npm leads a process group of its own, as under a supervisor or a terminal.
    const npm = spawnServe('npm', ['start', '--', '--port', '0', '--data-dir', dataDir, '--config', await slowConfig(dir), '--grace-seconds', '60'], {
      cwd: repoRoot,
      detached: true,
      env: { ...process.env, SWITCHYARD_TOKEN: '' },
    });
    const url = await servedUrl(npm);
    const serverPid = npm.logLines().find((line) => line.msg.startsWith('listening on'))!.pid!;
    expect(serverPid).not.toBe(npm.child.pid);
    const client = await clientOf(url, join(dataDir, 'token'));
    const runIds = [];
    for (let i = 0; i < RUNS; i += 1) runIds.push((await client.submit({ sessionId: `s${i}`, input: 'take your time' })).runId);
    const results = Promise.all(runIds.map((runId) => client.wait(runId)));

    const pid = target === 'npm' ? npm.child.pid! : target === 'group' ? -npm.child.pid! : serverPid;
    process.kill(pid, signal);

    const exit = await npm.exited;
    expect(alive(serverPid)).toBe(false);
    expect(exit, npm.stderr()).toEqual({ code: 0, signal: null });
    const messages = npm.logLines().map((line) => line.msg);
    expect(messages.some((msg) => msg.startsWith(`${signal}: shutting down`))).toBe(true);
    expect(messages.at(-1)).toBe('stopped');
    expect(messages.some((msg) => msg.startsWith('cancelling'))).toBe(false);
    expect(await results).toEqual(runIds.map((runId) => expect.objectContaining({ runId, state: 'completed', output: 'finished' })));
  });
});
