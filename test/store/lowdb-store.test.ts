/*
 * LowdbStore on real temp directories: the Store contract (read-your-writes, after reopen,
 * across tiny segments), then what only a file store has — coalesced and ordered writes,
 * segmented logs, safe file names, damaged files, the directory lock, bounded memory.
 */
import { spawnSync } from 'node:child_process';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { basename, dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RunEvent } from '../../src/core/run-events.js';
import { LowdbStore, type LowdbStoreOptions } from '../../src/store/index.js';
import { describeStoreConformance, runEvent, runRecord } from './store-conformance.js';
import { tempDirs } from '../support/temp-dirs.js';

const tempDir = tempDirs('switchyard-store-', 'afterAll');

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name))
    .sort();
}

async function withStore<T>(
  dir: string,
  options: LowdbStoreOptions,
  use: (store: LowdbStore) => Promise<T>,
): Promise<T> {
  const store = await LowdbStore.open(dir, options);
  try {
    return await use(store);
  } finally {
    await store.close();
  }
}

function lowdbHarness(options: LowdbStoreOptions, reopen: boolean) {
  let dir = '';
  return {
    open: async () => LowdbStore.open((dir = await tempDir()), options),
    reread: async (store: LowdbStore | import('../../src/store/index.js').Store) => {
      if (!reopen) return store;
      await store.close();
      return LowdbStore.open(dir, options);
    },
  };
}

describeStoreConformance('LowdbStore, read before anything is flushed', lowdbHarness({}, false));
describeStoreConformance('LowdbStore, read after close and reopen', lowdbHarness({}, true));
describeStoreConformance('LowdbStore with 2-item segments, reopened', lowdbHarness({ segmentItems: 2 }, true));

describe('LowdbStore: reads and writes', () => {
  it('reads see every write at once, before any file is written', async () => {
    await withStore(await tempDir(), {}, async (store) => {
      for (let seq = 1; seq <= 5; seq++) void store.appendEvent(runEvent('r1', 's1', seq, seq));
      void store.saveRun(runRecord('r1', 'running'));
      void store.appendMessages('s1', [{ role: 'user', content: 'hi' }]);
      void store.saveLane('s1', [{ runId: 'r2', viaInterrupt: false }]);
      expect(store.stats().fileWrites).toBe(0);
      expect((await store.readEvents('r1', 2)).map((e) => e.seq)).toEqual([3, 4, 5]);
      expect((await store.readSessionEvents('s1', 4)).map((e) => e.seq)).toEqual([5]);
      expect((await store.getRun('r1'))?.state).toBe('running');
      expect((await store.listRuns(['running'])).map((r) => r.runId)).toEqual(['r1']);
      expect(await store.readConversation('s1')).toEqual([{ role: 'user', content: 'hi' }]);
      expect(await store.readLanes()).toEqual({ s1: [{ runId: 'r2', viaInterrupt: false }] });
    });
  });

  it('an append resolves once it is in the journal; flush() writes the files: the run record, the event, then the session log entry', async () => {
    const dir = await tempDir();
    await withStore(dir, {}, async (store) => {
      void store.saveRun(runRecord('r1', 'running'));
      await store.appendEvent(runEvent('r1', 's1', 1, 1));
      const journal = await readFile(join(dir, 'journal', '1.jsonl'), 'utf8');
      expect(
        journal
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line).k),
      ).toEqual(['run', 'event']);
      await store.flush();
      const files = await filesUnder(dir);
      const fileIn = (area: string) => files.find((f) => relative(dir, f).startsWith(area))!;
      expect(JSON.parse(await readFile(fileIn('runs/'), 'utf8'))).toMatchObject({ runId: 'r1', state: 'running' });
      expect(JSON.parse(await readFile(fileIn('events'), 'utf8'))).toEqual([runEvent('r1', 's1', 1, 1)]);
      expect(JSON.parse(await readFile(fileIn('sessions'), 'utf8'))).toEqual([[1, 'r1', 1]]);
      expect(JSON.parse(await readFile(join(dir, 'open-runs.json'), 'utf8'))).toEqual({ runs: ['r1'] });
    });
  });

  it('carries on a log after a reopen, without a gap', async () => {
    const dir = await tempDir();
    const options = { segmentItems: 3 };
    await withStore(dir, options, async (store) => {
      for (let seq = 1; seq <= 4; seq++) void store.appendEvent(runEvent('r1', 's1', seq, seq));
    });
    await withStore(dir, options, async (store) => {
      const last = (await store.readEvents('r1')).at(-1)!;
      for (let seq = last.seq + 1; seq <= 8; seq++) void store.appendEvent(runEvent('r1', 's1', seq, seq));
    });
    await withStore(dir, options, async (store) => {
      expect((await store.readEvents('r1')).map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
      expect((await store.readSessionEvents('s1', 2)).map((e) => e.sessionSeq)).toEqual([3, 4, 5, 6, 7, 8]);
    });
  });

  it('rejects every call once closed', async () => {
    const store = await LowdbStore.open(await tempDir());
    await store.close();
    await expect(store.appendEvent(runEvent('r1', 's1', 1, 1))).rejects.toMatchObject({ code: 'store_closed' });
    await expect(store.getRun('r1')).rejects.toMatchObject({ code: 'store_closed' });
    await store.close();
  });
});

describe('LowdbStore: coalesced writes', () => {
  it('1,000 appends in one tick cost one write per segment file', async () => {
    await withStore(await tempDir(), {}, async (store) => {
      const appends = Array.from({ length: 1000 }, (_, i) => store.appendEvent(runEvent('r1', 's1', i + 1, i + 1)));
      await Promise.all(appends);
      expect(store.stats().journalWrites).toBe(1);
      await store.flush();
      // 1,000 events in 256-item segments: 4 run log files and 4 session log files.
      expect(store.stats().fileWrites).toBe(8);
    });
  });

  it('a burst across 100 runs of 10 sessions costs one write per file', async () => {
    await withStore(await tempDir(), {}, async (store) => {
      const sessionSeq = new Map<string, number>();
      const appends: Promise<void>[] = [];
      for (let seq = 1; seq <= 10; seq++) {
        for (let run = 0; run < 100; run++) {
          const sessionId = `s${run % 10}`;
          const next = (sessionSeq.get(sessionId) ?? 0) + 1;
          sessionSeq.set(sessionId, next);
          appends.push(store.appendEvent(runEvent(`r${run}`, sessionId, seq, next)));
        }
      }
      await Promise.all(appends);
      expect(store.stats().journalWrites).toBe(1);
      await store.flush();
      expect(store.stats().fileWrites).toBe(110);
    });
  });

  it('an event awaited at a time costs one journal append; the files follow in the background, coalesced', async () => {
    await withStore(await tempDir(), {}, async (store) => {
      for (let seq = 1; seq <= 20; seq++) await store.appendEvent(runEvent('r1', 's1', seq, seq));
      expect(store.stats().journalWrites).toBe(20);
      await store.flush();
      expect(store.stats().fileWrites).toBeLessThanOrEqual(40);
    });
  });

  it('changes asked for together share one journal append (group commit)', async () => {
    await withStore(await tempDir(), {}, async (store) => {
      const writes = [
        store.saveRun(runRecord('r1', 'queued')),
        store.saveLane('s1', [{ runId: 'r2', viaInterrupt: false }]),
      ];
      for (let seq = 1; seq <= 50; seq++) writes.push(store.appendEvent(runEvent('r1', 's1', seq, seq)));
      await Promise.all(writes);
      await store.durable();
      expect(store.stats().journalWrites).toBe(1);
    });
  });
});

describe('LowdbStore: segmented logs', () => {
  it('10,000 events of one run land in segments and read back whole and from any point, also after reopen', async () => {
    const dir = await tempDir();
    await withStore(dir, {}, async (store) => {
      for (let burst = 0; burst < 10; burst++) {
        await Promise.all(
          Array.from({ length: 1000 }, (_, i) =>
            store.appendEvent(runEvent('long', 's1', burst * 1000 + i + 1, burst * 1000 + i + 1)),
          ),
        );
      }
    });
    const segments = (await filesUnder(join(dir, 'events'))).filter((f) => !basename(f).startsWith('.'));
    expect(segments).toHaveLength(Math.ceil(10_000 / 256));
    await withStore(dir, { cachedSegments: 4 }, async (store) => {
      const seqs = (await store.readEvents('long')).map((e) => e.seq);
      expect(seqs).toEqual(Array.from({ length: 10_000 }, (_, i) => i + 1));
      for (const after of [0, 255, 256, 257, 5000, 9999, 10_000]) {
        const tail = await store.readEvents('long', after);
        expect(tail.length).toBe(10_000 - after);
        expect(tail[0]?.seq).toBe(after === 10_000 ? undefined : after + 1);
      }
      expect((await store.readSessionEvents('s1', 9990)).map((e) => e.seq)).toEqual([
        9991, 9992, 9993, 9994, 9995, 9996, 9997, 9998, 9999, 10_000,
      ]);
      expect(store.stats().cachedSegments).toBeLessThanOrEqual(3 * 4);
      await store.appendEvent(runEvent('long', 's1', 10_001, 10_001));
      expect((await store.readEvents('long', 9999)).map((e) => e.seq)).toEqual([10_000, 10_001]);
    });
  });

  it('a segment also ends at its size cap; a larger item gets a segment of its own', async () => {
    const dir = await tempDir();
    const big = (seq: number, size: number): RunEvent => ({
      ...runEvent('r1', 's1', seq, seq),
      type: 'model.delta',
      turn: 0,
      text: 'x'.repeat(size),
    });
    await withStore(dir, { segmentBytes: 4000 }, async (store) => {
      for (let seq = 1; seq <= 20; seq++) void store.appendEvent(big(seq, seq === 10 ? 10_000 : 900));
    });
    const segments = await filesUnder(join(dir, 'events'));
    expect(segments.length).toBeGreaterThanOrEqual(6);
    await withStore(dir, {}, async (store) => {
      expect((await store.readEvents('r1')).map((e) => (e.type === 'model.delta' ? e.text.length : 0))).toEqual(
        Array.from({ length: 20 }, (_, i) => (i === 9 ? 10_000 : 900)),
      );
    });
  });

  it('keeps ended runs and idle logs out of memory', async () => {
    await withStore(await tempDir(), { openLogs: 8 }, async (store) => {
      for (let run = 0; run < 100; run++) {
        const sessionId = `s${run}`;
        void store.saveRun(runRecord(`r${run}`, 'running', sessionId));
        void store.appendEvent(runEvent(`r${run}`, sessionId, 1, 1));
        void store.appendEvent({
          ...runEvent(`r${run}`, sessionId, 2, 2),
          type: 'run.completed',
          output: 'ok',
          usage: { turns: 1 },
          toolCalls: 0,
        });
        void store.saveRun(runRecord(`r${run}`, 'completed', sessionId));
      }
      await store.flush();
      expect(store.stats().openLogs).toBeLessThanOrEqual(8);
      expect(store.stats().openIndexLists).toBeLessThanOrEqual(8);
      expect(store.stats().pendingFiles).toBe(0);
      expect((await store.readEvents('r3')).map((e) => e.type)).toEqual(['turn.started', 'run.completed']);
      expect((await store.readSessionEvents('s97')).map((e) => e.seq)).toEqual([1, 2]);
    });
  });
});

describe('LowdbStore: open runs', () => {
  it('open-runs.json holds the runs whose end is not fully stored: a run leaves once its terminal event is', async () => {
    const dir = await tempDir();
    await withStore(dir, {}, async (store) => {
      for (const runId of ['a', 'b', 'c']) void store.saveRun(runRecord(runId, 'queued'));
      void store.saveRun(runRecord('a', 'running'));
      await store.flush();
      void store.saveRun(runRecord('a', 'completed'));
      void store.saveRun(runRecord('c', 'cancelled'));
      await store.flush();
      // Ended records, but their logs have no terminal event yet: recovery must still see them.
      expect(JSON.parse(await readFile(join(dir, 'open-runs.json'), 'utf8'))).toEqual({ runs: ['a', 'b', 'c'] });
      expect((await store.openRuns()).map((r) => r.runId)).toEqual(['a', 'b', 'c']);
      const at = '2026-01-01T00:00:00.000Z';
      void store.appendEvent({
        type: 'run.completed',
        runId: 'a',
        sessionId: 's1',
        seq: 1,
        sessionSeq: 1,
        at,
        output: 'done',
        usage: { turns: 1 },
        toolCalls: 0,
      });
      void store.appendEvent({
        type: 'run.cancelled',
        runId: 'c',
        sessionId: 's1',
        seq: 1,
        sessionSeq: 2,
        at,
        reason: 'x',
      });
      await store.flush();
      expect(JSON.parse(await readFile(join(dir, 'open-runs.json'), 'utf8'))).toEqual({ runs: ['b'] });
    });
    await withStore(dir, {}, async (store) => {
      expect((await store.listRuns(['queued', 'running'])).map((r) => r.runId)).toEqual(['b']);
      expect((await store.listRuns(['completed', 'cancelled'])).map((r) => r.runId).sort()).toEqual(['a', 'c']);
    });
  });

  it('forgets an open run whose record never landed', async () => {
    const dir = await tempDir();
    await withStore(dir, {}, async (store) => void store.saveRun(runRecord('real', 'queued')));
    await writeFile(join(dir, 'open-runs.json'), JSON.stringify({ runs: ['ghost', 'real'] }));
    await withStore(dir, {}, async (store) => {
      expect((await store.listRuns(['queued', 'running'])).map((r) => r.runId)).toEqual(['real']);
      await store.flush();
      expect(JSON.parse(await readFile(join(dir, 'open-runs.json'), 'utf8'))).toEqual({ runs: ['real'] });
    });
  });
});

describe('LowdbStore: file names', () => {
  const ids: [string, string][] = [
    ['a path that climbs out', '../../etc'],
    ['an absolute path', '/etc/passwd'],
    ['dots', '..'],
    ['empty', ''],
    ['separators', 'a/b\\c:d*e?f"g<h>i|j'],
    ['unicode', 'ünïcødé 会话 🚀'],
    ['500 characters', 'x'.repeat(500)],
    ['a reserved Windows name', 'CON'],
    ['__proto__', '__proto__'],
    ['only differs in case', 'Session'],
    ['only differs in case, too', 'session'],
  ];

  it('every id gets its own file inside the store directory, and reads back after reopen', async () => {
    const root = await tempDir();
    const dir = join(root, 'x', 'y', 'store');
    await withStore(dir, {}, async (store) => {
      for (const [, id] of ids) {
        void store.saveRun(runRecord(id, 'queued', id));
        void store.appendEvent(runEvent(id, id, 1, 1));
        void store.appendMessages(id, [{ role: 'user', content: `to ${id}` }]);
        void store.saveLane(id, [{ runId: id, viaInterrupt: false }]);
      }
    });
    await withStore(dir, {}, async (store) => {
      for (const [, id] of ids) {
        expect((await store.getRun(id))?.runId).toBe(id);
        expect(await store.readEvents(id)).toEqual([runEvent(id, id, 1, 1)]);
        expect(await store.readSessionEvents(id)).toEqual([runEvent(id, id, 1, 1)]);
        expect(await store.readConversation(id)).toEqual([{ role: 'user', content: `to ${id}` }]);
      }
      expect(Object.keys(await store.readLanes()).sort()).toEqual(ids.map(([, id]) => id).sort());
      expect((await store.listRuns(['queued'])).map((r) => r.runId)).toEqual(ids.map(([, id]) => id));
    });
    expect(await readdir(root)).toEqual(['x']);
    expect(await readdir(join(root, 'x'))).toEqual(['y']);
    const files = await filesUnder(dir);
    expect(files.filter((f) => relative(dir, f).startsWith('runs/'))).toHaveLength(ids.length);
    for (const file of files) {
      for (const part of relative(dir, file).split('/')) expect(Buffer.byteLength(part)).toBeLessThanOrEqual(80);
    }
  });
});

describe('LowdbStore: damaged files', () => {
  async function seeded(): Promise<string> {
    const dir = await tempDir();
    await withStore(dir, { segmentItems: 4 }, async (store) => {
      for (let seq = 1; seq <= 10; seq++) void store.appendEvent(runEvent('r1', 's1', seq, seq));
      for (let seq = 1; seq <= 3; seq++) void store.appendEvent(runEvent('r2', 's2', seq, seq));
    });
    return dir;
  }

  async function segmentsOf(dir: string, runId: string): Promise<string[]> {
    const files = await filesUnder(join(dir, 'events'));
    return files.filter((f) => basename(dirname(f)).startsWith(`${runId}-`));
  }

  it.each([
    ['torn JSON', '[\n{"type":"turn.started","runId":"r1"'],
    ['valid JSON of another shape', '{"not":"a segment"}'],
    ['an event without its seq', '[{"type":"turn.started","runId":"r1","sessionId":"s1","sessionSeq":9,"at":"x"}]'],
  ])('a last segment holding %s is reported with its path; other runs are unaffected', async (_what, content) => {
    const dir = await seeded();
    const last = (await segmentsOf(dir, 'r1')).at(-1)!;
    await writeFile(last, content);
    await withStore(dir, { segmentItems: 4 }, async (store) => {
      const failure = { code: 'corrupt_file', message: expect.stringContaining(last) as unknown };
      await expect(store.readEvents('r1')).rejects.toMatchObject(failure);
      await expect(store.appendEvent(runEvent('r1', 's1', 11, 11))).rejects.toMatchObject(failure);
      expect((await store.readEvents('r2')).map((e) => e.seq)).toEqual([1, 2, 3]);
      expect((await store.readSessionEvents('s2')).map((e) => e.seq)).toEqual([1, 2, 3]);
    });
  });

  it('a damaged middle segment fails only the reads that need it', async () => {
    const dir = await seeded();
    const [, middle] = await segmentsOf(dir, 'r1');
    await writeFile(middle!, '[{"type":');
    await withStore(dir, { segmentItems: 4 }, async (store) => {
      await expect(store.readEvents('r1')).rejects.toMatchObject({ code: 'corrupt_file' });
      expect((await store.readEvents('r1', 8)).map((e) => e.seq)).toEqual([9, 10]);
      await store.appendEvent(runEvent('r1', 's1', 11, 11));
      expect((await store.readEvents('r1', 9)).map((e) => e.seq)).toEqual([10, 11]);
    });
  });

  it.each([
    ['open-runs.json', '{"runs":[]}'],
    ['lanes.json', '{"lanes":[]}'],
  ])('a damaged %s makes open() fail with corrupt_file', async (name, valid) => {
    const dir = await seeded();
    await writeFile(join(dir, name), '{"runs": [');
    await expect(LowdbStore.open(dir)).rejects.toMatchObject({
      code: 'corrupt_file',
      message: expect.stringContaining(name) as unknown,
    });
    // The failed open left the directory unlocked.
    await writeFile(join(dir, name), valid);
    await withStore(dir, {}, async (store) => expect((await store.readEvents('r2')).length).toBe(3));
  });

  it('temp files left by interrupted writes are ignored', async () => {
    const dir = await seeded();
    const [first] = await segmentsOf(dir, 'r1');
    await writeFile(join(dirname(first!), `.${basename(first!)}.tmp`), '[{"torn');
    await writeFile(join(dir, '.open-runs.json.tmp'), '{"ru');
    await withStore(dir, { segmentItems: 4 }, async (store) => {
      expect((await store.readEvents('r1')).map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    });
  });

  it('a directory of another format is refused', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'switchyard-store.json'), JSON.stringify({ format: 'switchyard-lowdb', version: 99 }));
    await expect(LowdbStore.open(dir)).rejects.toMatchObject({ code: 'unsupported_format' });
  });
});

describe('LowdbStore: one store per directory', () => {
  it('a second open fails with store_locked until the first is closed', async () => {
    const dir = await tempDir();
    const first = await LowdbStore.open(dir);
    await expect(LowdbStore.open(dir)).rejects.toMatchObject({ code: 'store_locked' });
    await first.close();
    await (await LowdbStore.open(dir)).close();
  });

  it('a lock left by a process that is gone is taken over', async () => {
    const dir = await tempDir();
    const gone = spawnSync(process.execPath, ['-e', '']).pid!;
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, 'LOCK'), JSON.stringify({ pid: gone }));
    await (await LowdbStore.open(dir)).close();
  });
});
