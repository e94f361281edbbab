/*
 * A real crash: a child process writes to a LowdbStore and is killed with SIGKILL mid-way,
 * four times over on the same directory. After each kill, a new store must open the directory
 * (taking over the dead process's lock), hold every write the child saw acknowledged, keep
 * every run log gapless, index every stored event in its session's log (an event whose write
 * never completed leaves its session number unused, never reused), list every stored run
 * exactly once in its runs index, in the state its record holds, and every file must parse.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { LowdbStore } from '../../src/store/index.js';
import { tempDirs } from '../support/temp-dirs.js';

const child = fileURLToPath(new URL('./fixtures/append-until-killed.ts', import.meta.url));
const runs = ['r0', 'r1', 'r2', 'r3', 'r4', 'r5'];
const sessions = ['s0', 's1'];
const tempDir = tempDirs('switchyard-crash-', 'afterAll');
let dir = '';

interface Acknowledged {
  seq: Map<string, number>;
  sessionEntries: Map<string, Map<number, [string, number]>>;
  messages: Map<string, number>;
  lane: number;
  /** Runs whose save the child saw resolve, with the last such state. */
  runs: Map<string, string>;
}

/** Runs the child until it has acknowledged `writes` writes, then kills it; returns what it acknowledged. */
async function runAndKill(writes: number, acked: Acknowledged): Promise<void> {
  const proc = spawn(process.execPath, ['--import', 'tsx', child, dir], { stdio: ['ignore', 'pipe', 'inherit'] });
  let seen = 0;
  createInterface({ input: proc.stdout }).on('line', (line) => {
    const [kind, a, b, c, d] = line.split(' ');
    if (kind === 'ack') {
      acked.seq.set(a!, Math.max(acked.seq.get(a!) ?? 0, Number(b)));
      acked.sessionEntries.get(c!)!.set(Number(d), [a!, Number(b)]);
    } else if (kind === 'msg') {
      acked.messages.set(a!, Math.max(acked.messages.get(a!) ?? 0, Number(b)));
    } else if (kind === 'lane') {
      acked.lane = Math.max(acked.lane, Number(a));
    } else if (kind === 'run') {
      if (acked.runs.get(a!) === undefined || b !== 'queued') acked.runs.set(a!, b!);
    }
    if (++seen === writes) proc.kill('SIGKILL');
  });
  await once(proc, 'close');
  expect(proc.signalCode).toBe('SIGKILL');
}

/** Parses every file the store wrote (temp files of interrupted writes aside); returns how many. */
async function everyFileParses(): Promise<number> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  const files = entries.filter((e) => e.isFile() && !e.name.startsWith('.') && e.name.endsWith('.json'));
  for (const file of files) {
    const path = join(file.parentPath, file.name);
    const text = await readFile(path, 'utf8');
    expect(() => JSON.parse(text), path).not.toThrow();
  }
  return files.length;
}

it('after SIGKILL at any moment, every acknowledged write is on disk, logs have no gaps, and no file is torn', async () => {
  dir = await tempDir();
  const acked: Acknowledged = {
    seq: new Map(),
    sessionEntries: new Map(sessions.map((s) => [s, new Map()])),
    messages: new Map(),
    lane: 0,
    runs: new Map(),
  };
  for (const writes of [150, 420, 777, 1500]) {
    await runAndKill(writes, acked);

    // Much may still be only in the journal (the files follow it): whatever files exist parse.
    expect(await everyFileParses()).toBeGreaterThan(0);

    const store = await LowdbStore.open(dir, { segmentItems: 16 });
    try {
      for (const runId of runs) {
        const seqs = (await store.readEvents(runId)).map((e) => e.seq);
        expect(seqs, `${runId} has no gap`).toEqual(seqs.map((_, i) => i + 1));
        expect(seqs.length, `${runId} holds every acknowledged event`).toBeGreaterThanOrEqual(
          acked.seq.get(runId) ?? 0,
        );
        expect((await store.getRun(runId))?.state).toBe('running');
      }
      for (const sessionId of sessions) {
        const events = await store.readSessionEvents(sessionId);
        const numbers = events.map((e) => e.sessionSeq);
        expect(numbers, `${sessionId} numbers only increase`).toEqual([...new Set(numbers)].sort((a, b) => a - b));
        const stored = (await Promise.all(runs.map((runId) => store.readEvents(runId))))
          .flat()
          .filter((e) => e.sessionId === sessionId);
        expect(numbers, `${sessionId} replays every stored event of its runs`).toEqual(
          stored.map((e) => e.sessionSeq).sort((a, b) => a - b),
        );
        const bySessionSeq = new Map(events.map((e) => [e.sessionSeq, e]));
        for (const [sessionSeq, [runId, seq]] of acked.sessionEntries.get(sessionId)!) {
          expect(bySessionSeq.get(sessionSeq), `${sessionId} #${sessionSeq}`).toMatchObject({ runId, seq, sessionSeq });
        }
        const conversation = (await store.readConversation(sessionId)).map((m) => m.content);
        expect(conversation).toEqual(conversation.map((_, i) => `m${i + 1}`));
        expect(conversation.length).toBeGreaterThanOrEqual(acked.messages.get(sessionId) ?? 0);
      }
      const lane = (await store.readLanes()).s0?.[0]?.runId ?? 'q0';
      expect(Number(lane.slice(1))).toBeGreaterThanOrEqual(acked.lane);

      // The runs index: a walk through every page meets each stored run once, as its record is now.
      const stored = new Map(
        (await store.listRuns(['queued', 'running', 'completed', 'cancelled', 'failed'])).map((r) => [
          r.runId,
          r.state,
        ]),
      );
      const listed: [string, string][] = [];
      let before: string | undefined;
      do {
        const page = await store.queryRuns({ limit: 37, ...(before ? { before } : {}) });
        listed.push(...page.runs.map((r): [string, string] => [r.runId, r.state]));
        before = page.cursor;
      } while (before);
      expect(listed.map(([runId]) => runId).sort()).toEqual([...stored.keys()].sort());
      expect(new Map(listed)).toEqual(stored);
      // A later save may have landed with the acknowledged one, its own acknowledgement cut off by the kill.
      for (const [runId, state] of acked.runs)
        expect(state === 'queued' ? ['queued', 'completed', 'cancelled'] : [state], runId).toContain(stored.get(runId));
    } finally {
      await store.close();
    }
  }
  expect([...acked.seq.values()].reduce((a, b) => a + b, 0)).toBeGreaterThan(1000);
  expect(acked.runs.size).toBeGreaterThan(100);
}, 120_000);
