/*
 * The write-ahead journal on its own: changes asked for together share one append, a torn
 * last line (a crash mid-append) is never replayed, a full segment gives way to a new one and
 * goes once the store's files hold its changes, and a clean close leaves nothing to replay.
 */
import { writeSync } from 'node:fs';
import { appendFile, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Journal } from '../../src/store/journal.js';
import { deferred } from '../support/deferred.js';
import { eventually } from '../support/eventually.js';
import { tempDirs } from '../support/temp-dirs.js';

const tempDir = tempDirs('switchyard-journal-');

async function journalDir(): Promise<string> {
  return join(await tempDir(), 'journal');
}

const settled = () => Promise.resolve();

describe('Journal', () => {
  it('writes the changes of one tick in one append, in order', async () => {
    const dir = await journalDir();
    const { journal } = await Journal.open(dir, { fsync: false, checkpoint: settled });
    await Promise.all([journal.append({ n: 1 }), journal.append({ n: 2 }), journal.append({ n: 3 })]);
    await journal.append({ n: 4 });
    expect(journal.writes).toBe(2);
    const lines = (await readFile(join(dir, '1.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }]);
  });

  it('gives back what a crashed process left, without its torn last line', async () => {
    const dir = await journalDir();
    const first = await Journal.open(dir, { fsync: true, checkpoint: settled });
    await first.journal.append({ n: 1 });
    await first.journal.append({ n: 2 });
    // The process dies in the middle of its next append.
    await appendFile(join(dir, '1.jsonl'), '{"n":3,"tor');
    const again = await Journal.open(dir, { fsync: false, checkpoint: settled });
    expect(again.leftOver).toEqual([{ n: 1 }, { n: 2 }]);
    await again.journal.append({ n: 'new' });
    // New changes go to a new segment; the old one is discarded once the files hold it.
    expect(await readdir(dir)).toEqual(['1.jsonl', '2.jsonl']);
    await again.journal.discard(again.segments);
    expect(await readdir(dir)).toEqual(['2.jsonl']);
  });

  it('starts a new segment when one is full and drops the old one after the checkpoint', async () => {
    const dir = await journalDir();
    const checkpoint = deferred();
    const { journal } = await Journal.open(dir, {
      fsync: false,
      segmentBytes: 64,
      checkpoint: () => checkpoint.promise,
    });
    await journal.append({ text: 'x'.repeat(40) });
    await journal.append({ text: 'y'.repeat(40) });
    expect(await readdir(dir)).toEqual(['1.jsonl', '2.jsonl']);
    expect(await readdir(dir)).toEqual(['1.jsonl', '2.jsonl']);
    checkpoint.resolve();
    // The old segment goes once the checkpoint resolves.
    await eventually(async () => (await readdir(dir)).length === 1, 'the old segment is removed');
    expect(await readdir(dir)).toEqual(['2.jsonl']);
  });

  it('a clean close leaves nothing to replay', async () => {
    const dir = await journalDir();
    const { journal } = await Journal.open(dir, { fsync: false, checkpoint: settled });
    await journal.append({ n: 1 });
    await journal.close();
    expect((await Journal.open(dir, { fsync: false, checkpoint: settled })).leftOver).toEqual([]);
  });
});

describe('Journal on a disk that fills up', () => {
  /** A write(2) that writes at most `room` more bytes in all, a few at a time, then fails like a full disk. */
  function fillingDisk(room: { left: number }) {
    return (fd: number, buffer: Buffer, offset: number, length: number): number => {
      if (room.left === 0) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
      const n = Math.min(length, room.left, 7);
      room.left -= n;
      return writeSync(fd, buffer, offset, n);
    };
  }

  it('a write that writes short is continued until every byte is written', async () => {
    const dir = await journalDir();
    const room = { left: Number.POSITIVE_INFINITY };
    const { journal } = await Journal.open(dir, { fsync: false, checkpoint: settled, write: fillingDisk(room) });
    await Promise.all([journal.append({ n: 1, text: 'x'.repeat(50) }), journal.append({ n: 2 })]);
    await journal.append({ n: 3 });
    const again = await Journal.open(dir, { fsync: false, checkpoint: settled });
    expect(again.leftOver).toEqual([{ n: 1, text: 'x'.repeat(50) }, { n: 2 }, { n: 3 }]);
    expect(again.damaged).toEqual([]);
  });

  it('a batch that does not fit is refused whole and cut off, and the next one is taken once there is room', async () => {
    const dir = await journalDir();
    const room = { left: Number.POSITIVE_INFINITY };
    const { journal } = await Journal.open(dir, { fsync: false, checkpoint: settled, write: fillingDisk(room) });
    await journal.append({ n: 1 });
    room.left = 20;
    const refused = await Promise.allSettled([
      journal.append({ n: 2, text: 'y'.repeat(40) }),
      journal.append({ n: 3 }),
    ]);
    expect(refused.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    await expect(journal.durable()).rejects.toMatchObject({ code: 'ENOSPC' });
    // Nothing of the refused batch stays behind to be taken for a torn tail or glued to the next line.
    expect(await readFile(join(dir, '1.jsonl'), 'utf8')).toBe('{"n":1}\n');
    room.left = Number.POSITIVE_INFINITY;
    await journal.append({ n: 4 });
    await expect(journal.durable()).resolves.toBeUndefined();
    const again = await Journal.open(dir, { fsync: false, checkpoint: settled });
    expect(again.leftOver).toEqual([{ n: 1 }, { n: 4 }]);
    expect(again.damaged).toEqual([]);
  });

  it('a damaged middle line is skipped and reported; the lines after it are still read', async () => {
    const dir = await journalDir();
    const { journal } = await Journal.open(dir, { fsync: false, checkpoint: settled });
    for (let n = 1; n <= 4; n++) await journal.append({ n });
    const path = join(dir, '1.jsonl');
    const lines = (await readFile(path, 'utf8')).split('\n');
    lines[1] = '{"n":2, garbage';
    await writeFile(path, lines.join('\n'));
    const again = await Journal.open(dir, { fsync: false, checkpoint: settled });
    expect(again.leftOver).toEqual([{ n: 1 }, { n: 3 }, { n: 4 }]);
    expect(again.damaged).toEqual([{ segment: path, line: 2, reason: expect.any(String) }]);
  });
});
