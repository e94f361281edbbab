/*
 * The checkpoint writer thread: the file writes of one macrotask go to the worker together,
 * each settles by itself, the worker comes back after it was stopped, and a directory removed
 * behind its back is made again.
 */
import { readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CheckpointThread } from '../../src/store/checkpoint-thread.js';
import { tempDirs } from '../support/temp-dirs.js';

const tempDir = tempDirs('switchyard-checkpoint-', 'afterAll');

describe('CheckpointThread', () => {
  it('writes a batch in order, private, and fails only the write that could not be done, with its code', async () => {
    const dir = await tempDir();
    await writeFile(join(dir, 'blocker'), 'a file, not a directory');
    const thread = new CheckpointThread();
    const results = await Promise.allSettled([
      thread.write(join(dir, 'nested', 'a.json'), 'first'),
      thread.write(join(dir, 'blocker', 'b.json'), 'never'),
      thread.write(join(dir, 'nested', 'a.json'), 'second'),
    ]);
    expect(results.map((result) => result.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason).toMatchObject({
      code: expect.stringMatching(/^E[A-Z]+$/),
      message: expect.stringContaining('blocker'),
    });
    expect(await readFile(join(dir, 'nested', 'a.json'), 'utf8')).toBe('second');
    expect((await stat(join(dir, 'nested', 'a.json'))).mode & 0o777).toBe(0o600);
    expect((await stat(join(dir, 'nested'))).mode & 0o777).toBe(0o700);
    await thread.close();
  });

  it('starts a new worker for a write after close(), and makes a removed directory again', async () => {
    const dir = await tempDir();
    const thread = new CheckpointThread();
    await thread.write(join(dir, 'logs', 'x.json'), 'one');
    await thread.close();
    await rm(join(dir, 'logs'), { recursive: true });
    await thread.write(join(dir, 'logs', 'x.json'), 'two');
    expect(await readFile(join(dir, 'logs', 'x.json'), 'utf8')).toBe('two');
    await rm(join(dir, 'logs'), { recursive: true });
    await thread.write(join(dir, 'logs', 'x.json'), 'three');
    expect(await readFile(join(dir, 'logs', 'x.json'), 'utf8')).toBe('three');
    await thread.close();
  });
});
