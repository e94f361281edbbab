/*
 * The store's faults tried from outside, on a real `switchyard serve` (through tsx) whose data
 * directory is on a small tmpfs (mounted here; the tests run as root, in CI too):
 *
 * - a full disk: the gateway stays up, refuses submits with store_failed, answers reads,
 *   reports not-ready, and takes submits again once there is room, without a restart; every
 *   message it acknowledged is there after a SIGKILL and a restart, and a restart on the still
 *   full disk starts (not ready) instead of exiting;
 * - a journal whose middle line was damaged after a crash: only that line is lost, reported
 *   in the log and in /readyz;
 * - a damaged store file after a crash: its run answers corrupt_file (not -32603), runs.query
 *   leaves it out and names it, and the other sessions carry on.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, openSync, writeSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { connect, type SwitchyardClient } from '../../src/client/index.js';
import { ClientError } from '../../src/client/client-error.js';
import { readToken } from '../../src/gateway/index.js';
import { idPath } from '../../src/store/file-names.js';
import { spawnServe, type ServeProcess } from './gateway-crash-harness.js';
import { eventually } from '../support/eventually.js';
import { tempDirs } from '../support/temp-dirs.js';

let base = '';
let disk = '';
let config = '';
const servers: Server[] = [];

interface Server extends ServeProcess {
  httpUrl: string;
}

const tempDir = tempDirs('switchyard-store-faults-', 'afterAll');

beforeAll(async () => {
  base = await tempDir();
  disk = join(base, 'disk');
  await mkdir(disk);
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=16m', 'tmpfs', disk]);
  const script = join(base, 'script.json');
  await writeFile(script, JSON.stringify([{ text: 'fine', delayMs: 5 }]));
  config = join(base, 'switchyard.toml');
  await writeFile(
    config,
    [
      '[execution]',
      'default_model = "steady"',
      '[models.steady]',
      'kind = "scripted"',
      `script = ${JSON.stringify(script)}`,
      '[sandbox]',
      `workspace_root = ${JSON.stringify(join(base, 'ws'))}`,
    ].join('\n'),
  );
});

afterAll(async () => {
  for (const server of servers) {
    server.child.kill('SIGKILL');
    await server.closed;
  }
  if (disk) execFileSync('umount', [disk]);
});

async function start(dataDir: string): Promise<Server> {
  const server: Server = { ...spawnServe(dataDir, config), httpUrl: '' };
  const { child } = server;
  servers.push(server);
  await eventually(
    () => /(^token\b|gateway token\b).*\n/m.test(server.stdout()) || child.exitCode !== null,
    'serve announces its token or exits',
    { withinMs: 60_000 },
  );
  if (child.exitCode !== null) throw new Error(`serve exited ${child.exitCode}:\n${server.stdout()}`);
  server.url = /listening on (ws:\/\/[^\s"]+)/.exec(server.stdout())![1]!;
  server.httpUrl = server.url.replace(/^ws/, 'http');
  return server;
}

async function kill(server: Server): Promise<void> {
  server.child.kill('SIGKILL');
  await server.closed;
}

async function clientOf(server: Server, dataDir: string): Promise<SwitchyardClient> {
  return connect(server.url, { token: (await readToken(join(dataDir, 'token')))! });
}

async function readyz(server: Server): Promise<{ status: number; body: { ready: boolean; details?: string[] } }> {
  const response = await fetch(`${server.httpUrl}/readyz`);
  return { status: response.status, body: (await response.json()) as { ready: boolean; details?: string[] } };
}

/** Fills the disk to the last byte: big writes, then small ones (short writes included). */
function fill(path: string): void {
  const fd = openSync(path, 'a');
  try {
    for (const size of [64 * 1024, 4096, 512, 64, 1]) {
      try {
        for (;;) writeSync(fd, Buffer.alloc(size));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
      }
    }
  } finally {
    closeSync(fd);
  }
}

it(
  'on a full disk the gateway stays up, refuses with store_failed, answers reads, is not ready, ' +
    'and takes writes again once there is room; nothing acknowledged is lost',
  async () => {
    const dataDir = join(disk, 'full');
    let server = await start(dataDir);
    let client = await clientOf(server, dataDir);
    const acked = new Set<string>();
    const refused = new Set<string>();
    const submit = async (n: number) => {
      try {
        const answer = await client.submit({ sessionId: `s${n % 3}`, input: `message ${n} ${'x'.repeat(200)}` });
        acked.add(answer.runId);
      } catch (error) {
        expect(error).toBeInstanceOf(ClientError);
        expect((error as ClientError).engineCode, (error as Error).message).toBe('store_failed');
        refused.add(String(n));
      }
    };
    for (let n = 0; n < 5; n++) await submit(n);
    expect(acked.size).toBe(5);
    const firstRun = [...acked][0]!;
    await client.wait(firstRun);

    const filler = join(disk, 'filler');
    fill(filler);
    for (let n = 5; n < 45; n++) {
      await submit(n);
      if (n % 10 === 0) fill(join(disk, `filler-${n}`));
    }
    expect(refused.size).toBeGreaterThan(0);
    // Not ready while writes fail; reads still answer; the process is still there.
    await eventually(async () => (await readyz(server)).status === 503, 'readyz says 503', { withinMs: 30_000 });
    expect((await readyz(server)).body.details?.join('\n')).toMatch(/writes fail/);
    expect((await client.get(firstRun)).state).toBe('completed');
    expect((await client.history(firstRun)).length).toBeGreaterThan(0);
    await expect(client.submit({ sessionId: 's9', input: 'still full' })).rejects.toMatchObject({
      engineCode: 'store_failed',
    });
    expect(server.child.exitCode).toBeNull();

    // Room again: ready again, and submits are taken, without a restart.
    for (const name of await readdir(disk)) if (name.startsWith('filler')) await rm(join(disk, name));
    await eventually(async () => (await readyz(server)).status === 200, 'readyz says 200', { withinMs: 30_000 });
    const after = await client.submit({ sessionId: 's0', input: 'room again' });
    acked.add(after.runId);
    await client.wait(after.runId);
    expect(server.child.exitCode).toBeNull();
    console.log(
      `full disk: ${acked.size} acknowledged, ${refused.size} refused with store_failed, the process stayed up`,
    );

    // Killed and started again: every acknowledged message is there.
    await client.close();
    await kill(server);
    server = await start(dataDir);
    client = await clientOf(server, dataDir);
    for (const runId of acked)
      expect(await client.get(runId).catch((error: unknown) => error), runId).toMatchObject({ runId });

    // Killed on a full disk, started again on it: it starts, not ready, and answers reads.
    await client.close();
    await kill(server);
    fill(filler);
    server = await start(dataDir);
    client = await clientOf(server, dataDir);
    expect((await client.get(firstRun)).state).toBe('completed');
    await expect(client.submit({ sessionId: 's1', input: 'full at start' })).rejects.toMatchObject({
      engineCode: 'store_failed',
    });
    await eventually(async () => (await readyz(server)).status === 503, 'readyz says 503', { withinMs: 30_000 });
    await rm(filler);
    await eventually(async () => (await readyz(server)).status === 200, 'readyz says 200', { withinMs: 30_000 });
    acked.add((await client.submit({ sessionId: 's1', input: 'room at last' })).runId);
    for (const runId of acked) expect((await client.get(runId)).runId).toBe(runId);
    await client.close();
    await kill(server);
  },
  240_000,
);

it('after a crash, a damaged middle journal line loses only that line, and a damaged run record answers corrupt_file while the others carry on', async () => {
  const dataDir = join(base, 'damaged');
  let server = await start(dataDir);
  let client = await clientOf(server, dataDir);
  const runs: string[] = [];
  for (let n = 0; n < 12; n++) {
    const answer = await client.submit({ sessionId: `d${n % 3}`, input: `message ${n}` });
    runs.push(answer.runId);
  }
  for (const runId of runs) await client.wait(runId);
  // Killed once the victim's record file is written (the journal still holds everything too).
  const victim = runs[4]!;
  const victimFile = join(dataDir, 'runs', `${idPath(victim)}.json`);
  await eventually(
    async () => (await readFile(victimFile, 'utf8').catch(() => '')).includes('"completed"'),
    'the victim run is stored completed',
    { withinMs: 30_000 },
  );
  await client.close();
  await kill(server);

  // A middle line of the journal (the journal survives the kill: nothing checkpointed it away yet).
  const journal = join(dataDir, 'journal');
  const segments = (await readdir(journal)).sort((a, b) => Number.parseInt(a) - Number.parseInt(b));
  const segment = join(journal, segments[0]!);
  const lines = (await readFile(segment, 'utf8')).split('\n');
  expect(lines.length).toBeGreaterThan(10);
  lines[3] = `${lines[3]!.slice(0, 20)}#damaged`;
  await writeFile(segment, lines.join('\n'));
  // One run record: damaged.
  await writeFile(victimFile, '');

  server = await start(dataDir);
  client = await clientOf(server, dataDir);
  expect(server.stdout()).toMatch(/journal: line 4 of .* is damaged/);
  expect(server.stdout()).toMatch(new RegExp(`quarantined run ${victim}`));
  const answer = await readyz(server);
  expect(answer.status).toBe(200);
  expect(answer.body.details?.join('\n')).toMatch(/damaged/);
  // The damaged run is corrupt_file, not an internal error; every other run is whole.
  await expect(client.get(victim)).rejects.toMatchObject({
    engineCode: 'corrupt_file',
    data: { details: { runId: victim } },
  });
  for (const runId of runs.filter((id) => id !== victim))
    expect((await client.get(runId)).state, runId).toBe('completed');
  const page = await client.call('runs.query', { limit: 50 });
  expect(page.runs.map((r) => r.runId).sort()).toEqual(runs.filter((id) => id !== victim).sort());
  expect(page.skipped?.map((s) => [s.runId, s.code])).toEqual([[victim, 'corrupt_file']]);
  // Its session carries on too: a new message in it runs.
  const next = await client.submit({ sessionId: 'd1', input: 'after the damage' });
  expect((await client.wait(next.runId)).state).toBe('completed');
  await client.close();
  await kill(server);
}, 240_000);
