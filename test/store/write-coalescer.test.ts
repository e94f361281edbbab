/*
 * The per-file write coalescer: one write per burst, never two writes of a file at once,
 * different files in parallel, content taken when the write starts, failures kept for flush.
 */
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { WriteCoalescer } from '../../src/store/write-coalescer.js';
import { deferred } from '../support/deferred.js';
import { settle } from '../support/settle.js';
import { tempDirs } from '../support/temp-dirs.js';

const tempDir = tempDirs('switchyard-writer-', 'afterAll');

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

describe('WriteCoalescer', () => {
  it('folds every write asked for in one tick into one, with the content of when it starts', async () => {
    const path = join(await tempDir(), 'a.json');
    const writer = new WriteCoalescer();
    let value = 0;
    const writes = Array.from({ length: 100 }, () => writer.write(path, () => ({ data: { value } })));
    value = 42;
    await Promise.all(writes);
    expect(writer.fileWrites).toBe(1);
    expect(await readFile(path, 'utf8')).toBe('{\n  "value": 42\n}\n');
  });

  it('never runs two writes of one file at once; what is asked for meanwhile becomes the next write', async () => {
    const path = join(await tempDir(), 'nested', 'dir', 'a.json');
    const writer = new WriteCoalescer();
    let running = 0;
    let most = 0;
    let value = 0;
    const snapshot = () => {
      running += 1;
      most = Math.max(most, running);
      return { data: { value }, ready: sleep(2), onWritten: () => (running -= 1) };
    };
    const writes: Promise<void>[] = [];
    for (let round = 0; round < 20; round++) {
      value = round;
      writes.push(writer.write(path, snapshot), writer.write(path, snapshot));
      await (round % 3 === 0 ? sleep(1) : settle(1));
    }
    await Promise.all(writes);
    expect(most).toBe(1);
    expect(writer.fileWrites).toBeLessThan(20);
    expect(JSON.parse(await readFile(path, 'utf8'))).toEqual({ value: 19 });
  });

  it('writes different files in parallel', async () => {
    const dir = await tempDir();
    const writer = new WriteCoalescer();
    const gate = deferred();
    let aDone = false;
    const a = writer
      .write(join(dir, 'a.json'), () => ({ data: ['a'], ready: gate.promise }))
      .then(() => (aDone = true));
    await writer.write(join(dir, 'b.json'), () => ({ data: ['b'] }));
    expect(aDone).toBe(false);
    expect(writer.has(join(dir, 'a.json'))).toBe(true);
    gate.resolve();
    await a;
    expect(writer.pendingFiles).toBe(0);
  });

  it('a failed write rejects its callers, is kept, and flush() retries it once before reporting write_failed', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'file'), 'not a directory');
    const writer = new WriteCoalescer();
    const path = join(dir, 'file', 'a.json');
    await expect(writer.write(path, () => ({ data: ['x'] }))).rejects.toThrow();
    expect(writer.has(path)).toBe(true);
    await expect(writer.flush()).rejects.toMatchObject({ code: 'write_failed', details: { path } });
    await rm(join(dir, 'file'));
    await writer.flush();
    expect(JSON.parse(await readFile(path, 'utf8'))).toEqual(['x']);
    expect(writer.has(path)).toBe(false);
  });
});
