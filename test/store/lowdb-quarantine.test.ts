/*
 * Damaged files after a crash: a store whose journal still holds its last changes (a process
 * that died) is opened with one of its files damaged from outside. Only open-runs.json and
 * lanes.json may stop open(); any other damaged file is moved to quarantine/, its run,
 * session or steer answers corrupt_file, the damage is reported, and every other run and
 * session carries on. Lists leave a damaged run out and name it.
 */
import { cp, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import type { Message } from '../../src/model/types.js';
import { idPath } from '../../src/store/file-names.js';
import { LowdbStore } from '../../src/store/index.js';
import { tempDirs } from '../support/temp-dirs.js';
import { runEvent, runRecord } from './store-conformance.js';

const tempDir = tempDirs('switchyard-quarantine-');
const message = (content: string): Message => ({ role: 'user', content });

/** Runs rA (session sA) and rB (session sB) with events, messages, a steer; then the directory as a crash left it. */
async function crashedStore(): Promise<string> {
  const dir = join(await tempDir(), 'live');
  const store = await LowdbStore.open(dir, { segmentItems: 2, segmentBytes: 1024 });
  for (const [runId, sessionId] of [
    ['rA', 'sA'],
    ['rB', 'sB'],
  ] as const) {
    await store.saveRun(runRecord(runId, 'running', sessionId));
    for (let seq = 1; seq <= 5; seq++) await store.appendEvent(runEvent(runId, sessionId, seq, seq));
    await store.appendMessages(sessionId, [message(`hello from ${sessionId}`), message('again')]);
    await store.appendMessages(sessionId, [message('and again')]);
  }
  await store.saveSteer({
    steerId: 'stA',
    sessionId: 'sA',
    into: 'rA',
    state: 'pending',
    createdAt: '2026-01-01T00:00:00.000Z',
    request: runRecord('stA', 'queued', 'sA').request,
  });
  await store.flush();
  // The files hold everything and the journal still does: a copy now is what a SIGKILL leaves.
  const crashed = join(dir, '..', 'crashed');
  await cp(dir, crashed, { recursive: true });
  await rm(join(crashed, 'LOCK'));
  await store.close();
  return crashed;
}

async function firstFile(dir: string): Promise<string> {
  const names = (await readdir(dir)).filter((name) => !name.startsWith('.')).sort();
  return join(dir, names[0]!);
}

/** A log's last segment: the one open() reads (an earlier one is found damaged by the reads that need it). */
async function lastFile(dir: string): Promise<string> {
  const names = (await readdir(dir)).filter((name) => !name.startsWith('.')).sort();
  return join(dir, names.at(-1)!);
}

const damagedFiles: [
  what: string,
  file: (dir: string) => Promise<string>,
  content: string,
  answers: (store: LowdbStore) => Promise<unknown>,
][] = [
  [
    'a run record',
    async (dir) => join(dir, 'runs', `${idPath('rA')}.json`),
    '{"runId":"rA","sess',
    (s) => s.getRun('rA'),
  ],
  ['a 0-byte run record', async (dir) => join(dir, 'runs', `${idPath('rA')}.json`), '', (s) => s.getRun('rA')],
  [
    'an event segment',
    (dir) => firstFile(join(dir, 'events', idPath('rA'))),
    '[{"type":"turn.st',
    (s) => s.readEvents('rA'),
  ],
  [
    'a session log segment',
    (dir) => lastFile(join(dir, 'sessions', idPath('sA'), 'events')),
    '[[1,"rA"',
    (s) => s.readSessionEvents('sA'),
  ],
  [
    'a conversation segment',
    (dir) => lastFile(join(dir, 'sessions', idPath('sA'), 'conversation')),
    '[{"role":',
    (s) => s.readConversation('sA'),
  ],
  [
    'a steer record',
    async (dir) => join(dir, 'steers', `${idPath('stA')}.json`),
    '{"steerId":"stA"',
    (s) => s.getSteer('stA'),
  ],
];

it.each(damagedFiles)(
  'after a crash, %s damaged is quarantined: it answers corrupt_file, the other session carries on',
  async (_what, fileOf, content, answers) => {
    const dir = await crashedStore();
    const file = await fileOf(dir);
    await writeFile(file, content);
    const reports: string[] = [];
    const store = await LowdbStore.open(dir, {
      segmentItems: 2,
      segmentBytes: 1024,
      onDamaged: (line) => reports.push(line),
    });
    try {
      await expect(answers(store)).rejects.toMatchObject({ code: 'corrupt_file' });
      expect(store.quarantined()).toHaveLength(1);
      expect(store.quarantined()[0]!.movedTo).toMatch(/^quarantine\//);
      expect(reports.join('\n')).toMatch(/quarantined/);
      expect((await store.health()).damage).toEqual(reports);
      // The other session: everything readable, and it takes writes.
      expect((await store.getRun('rB'))?.state).toBe('running');
      expect((await store.readEvents('rB')).map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
      expect((await store.readSessionEvents('sB')).map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
      expect(await store.readConversation('sB')).toHaveLength(3);
      await store.appendEvent(runEvent('rB', 'sB', 6, 6));
      expect((await store.openRuns()).map((r) => r.runId)).toContain('rB');
    } finally {
      await store.close();
    }
    // The quarantine outlives the process: the next open answers the same, without new damage.
    const again = await LowdbStore.open(dir, { segmentItems: 2, segmentBytes: 1024 });
    try {
      await expect(answers(again)).rejects.toMatchObject({ code: 'corrupt_file' });
      expect((await again.readEvents('rB')).map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    } finally {
      await again.close();
    }
  },
);

it('after a crash, a damaged runs-index segment is quarantined and the index rebuilt: runs.query lists every run', async () => {
  const dir = await crashedStore();
  await writeFile(await firstFile(join(dir, 'runs-index', 'all')), '[[1,"rA"');
  const reports: string[] = [];
  const store = await LowdbStore.open(dir, { segmentItems: 2, onDamaged: (line) => reports.push(line) });
  try {
    expect((await store.queryRuns({ limit: 10 })).runs.map((r) => r.runId).sort()).toEqual(['rA', 'rB']);
    expect(reports.join('\n')).toMatch(/runs index: damaged; rebuilt/);
  } finally {
    await store.close();
  }
});

it('a damaged record leaves runs.query and listRuns with the other runs, naming the damaged one', async () => {
  const dir = await tempDir();
  const store = await LowdbStore.open(dir);
  for (const runId of ['r1', 'r2', 'r3']) await store.saveRun(runRecord(runId, 'completed'));
  await store.close();
  await writeFile(join(dir, 'runs', `${idPath('r2')}.json`), '{"runId":"r2",');
  const reports: string[] = [];
  const again = await LowdbStore.open(dir, { onDamaged: (line) => reports.push(line) });
  try {
    const page = await again.queryRuns({ limit: 10 });
    expect(page.runs.map((r) => r.runId)).toEqual(['r3', 'r1']);
    expect(page.skipped).toEqual([
      { runId: 'r2', code: 'corrupt_file', message: expect.stringContaining(idPath('r2')) },
    ]);
    expect((await again.listRuns(['completed'])).map((r) => r.runId).sort()).toEqual(['r1', 'r3']);
    await expect(again.getRun('r2')).rejects.toMatchObject({ code: 'corrupt_file' });
  } finally {
    await again.close();
  }
});

it('damaged open-steers.json and grants.json do not stop open(): the pending steers are found again', async () => {
  const dir = await crashedStore();
  await writeFile(join(dir, 'open-steers.json'), '{"steers": [');
  await writeFile(join(dir, 'grants.json'), '');
  const store = await LowdbStore.open(dir, { segmentItems: 2 });
  try {
    expect((await store.pendingSteers()).map((s) => s.steerId)).toEqual(['stA']);
    // Files of no one run or session: set aside, and the store does without them.
    expect(store.quarantined().map((e) => [e.kind, e.id])).toEqual([
      ['file', 'open-steers.json'],
      ['file', 'grants.json'],
    ]);
    expect((await store.health()).damage.join('\n')).toMatch(/open-steers\.json[\s\S]*grants\.json/);
  } finally {
    await store.close();
  }
});
