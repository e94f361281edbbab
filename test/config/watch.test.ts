import { mkdir, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, defaultConfig, parseConfig, watchConfig } from '../../src/config/index.js';
import type { ConfigChange, ConfigWatcher } from '../../src/config/index.js';
import { tempDirs } from '../support/temp-dirs.js';

const WAIT_MS = 5000;

let dir: string;
let file: string;
let watcher: ConfigWatcher | undefined;

const tempDir = tempDirs('switchyard-watch-', 'afterEach');

beforeEach(async () => {
  dir = await tempDir();
  file = join(dir, 'switchyard.toml');
  await writeFile(file, '[execution]\nmax_runs_global = 4\n');
});
afterEach(async () => {
  watcher?.close();
  watcher = undefined;
});

/** Buffers changes so a test can await them one at a time, in order. */
function changeQueue() {
  const buffered: ConfigChange[] = [];
  const waiters: ((change: ConfigChange) => void)[] = [];
  return {
    onChange(change: ConfigChange): void {
      const waiter = waiters.shift();
      if (waiter) waiter(change);
      else buffered.push(change);
    },
    next(): Promise<ConfigChange> {
      const ready = buffered.shift();
      if (ready) return Promise.resolve(ready);
      return new Promise((resolve, reject) => {
        const waiter = (change: ConfigChange): void => {
          clearTimeout(timer);
          resolve(change);
        };
        const timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(waiter), 1);
          reject(new Error(`no config change within ${WAIT_MS} ms`));
        }, WAIT_MS);
        waiters.push(waiter);
      });
    },
    get pending(): number {
      return buffered.length;
    },
  };
}

async function start(queue: ReturnType<typeof changeQueue>): Promise<ConfigWatcher> {
  watcher = await watchConfig(file, (change) => queue.onChange(change), { debounceMs: 50 });
  return watcher;
}

function expectOk(change: ConfigChange): Extract<ConfigChange, { ok: true }> {
  if (!change.ok) throw change.error;
  return change;
}

function expectFailure(change: ConfigChange): Extract<ConfigChange, { ok: false }> {
  if (change.ok) throw new Error(`expected a failed reload, got changes ${change.changed.join(', ')}`);
  return change;
}

describe('watchConfig', () => {
  it('reload() re-reads now, also a change its watch cannot see (a symlink into another directory)', async () => {
    const target = join(dir, 'elsewhere', 'switchyard.toml');
    await mkdir(join(dir, 'elsewhere'));
    await writeFile(target, '[execution]\nmax_runs_global = 4\n');
    await rm(file);
    await symlink(target, file);
    const queue = changeQueue();
    const w = await start(queue);

    await writeFile(target, '[execution]\nmax_runs_global = 5\n');
    await w.reload();
    expect(w.current().execution.max_runs_global).toBe(5);
    expect(expectOk(await queue.next()).applied).toEqual(['execution.max_runs_global']);
    // Nothing changed since: nothing to report.
    await w.reload();
    expect(queue.pending).toBe(0);
  });

  it('reads the file first, then reloads on an in-place write with the applied keys', async () => {
    const queue = changeQueue();
    const w = await start(queue);
    expect(w.current().execution.max_runs_global).toBe(4);

    await writeFile(file, '[execution]\nmax_runs_global = 2\nbusy_policy = "queue"\n');
    const change = expectOk(await queue.next());
    expect(change.applied).toEqual(['execution.max_runs_global', 'execution.busy_policy']);
    expect(change.restartRequired).toEqual([]);
    expect(change.previous.execution.max_runs_global).toBe(4);
    expect(change.config.execution).toMatchObject({ max_runs_global: 2, busy_policy: 'queue' });
    expect(w.current()).toBe(change.config);
  });

  it('survives saves that rename a temp file over the config, again and again', async () => {
    const queue = changeQueue();
    const w = await start(queue);
    for (const value of [5, 6, 7]) {
      const tmp = `${file}.tmp`;
      await writeFile(tmp, `[execution]\nmax_runs_global = ${value}\n`);
      await rename(tmp, file);
      const change = expectOk(await queue.next());
      expect(change.applied).toEqual(['execution.max_runs_global']);
      expect(w.current().execution.max_runs_global).toBe(value);
    }
  });

  it('keeps the last good config on a bad edit, and recovers on the next good one', async () => {
    const queue = changeQueue();
    const w = await start(queue);
    const good = w.current();

    await writeFile(file, '[execution]\nmax_runs_global = 0\n');
    const failure = expectFailure(await queue.next());
    expect(failure.error).toBeInstanceOf(ConfigError);
    expect(failure.error.issues.map((i) => i.path)).toEqual(['execution.max_runs_global']);
    expect(failure.config).toBe(good);
    expect(w.current()).toBe(good);

    await writeFile(file, '[execution\nmax_runs_global = 3\n');
    const syntax = expectFailure(await queue.next());
    expect(syntax.error.code).toBe('toml_syntax');
    expect(w.current()).toBe(good);

    await writeFile(file, '[execution]\nmax_runs_global = 3\n');
    const recovered = expectOk(await queue.next());
    expect(recovered.previous).toBe(good);
    expect(recovered.applied).toEqual(['execution.max_runs_global']);
    expect(w.current().execution.max_runs_global).toBe(3);
  });

  it('after a bad edit, restoring the same good config reports the recovery', async () => {
    const queue = changeQueue();
    const w = await start(queue);
    const good = w.current();
    await writeFile(file, 'nonsense = 1\n');
    expectFailure(await queue.next());
    await writeFile(file, '[execution]\nmax_runs_global = 4\n');
    const recovered = expectOk(await queue.next());
    expect(recovered.changed).toEqual([]);
    expect(w.current()).toBe(good);
  });

  it('puts a gateway.port change in restartRequired', async () => {
    const queue = changeQueue();
    await start(queue);
    await writeFile(file, '[execution]\nmax_runs_global = 4\n[gateway]\nport = 9999\n[approval]\ntier = "ask"\n');
    const change = expectOk(await queue.next());
    expect(change.restartRequired).toEqual(['gateway.port']);
    expect(change.applied).toEqual(['approval.tier']);
  });

  it('emits nothing when the file changes but the config does not', async () => {
    const queue = changeQueue();
    await start(queue);
    await writeFile(file, '# a comment\n[execution]\nmax_runs_global = 4\n');
    // The next change seen must be this later, real one: the comment-only save emitted nothing.
    await writeFile(file, '[execution]\nmax_runs_global = 9\n');
    const change = expectOk(await queue.next());
    expect(change.previous.execution.max_runs_global).toBe(4);
    expect(change.applied).toEqual(['execution.max_runs_global']);
    expect(queue.pending).toBe(0);
  });

  it('ignores other files in the same directory', async () => {
    const queue = changeQueue();
    await start(queue);
    await writeFile(join(dir, 'other.toml'), 'garbage [[[');
    await writeFile(file, '[execution]\nmax_runs_global = 1\n');
    expect(expectOk(await queue.next()).config.execution.max_runs_global).toBe(1);
  });

  it('uses `initial` instead of reading the file, and diffs the first reload against it', async () => {
    const queue = changeQueue();
    const initial = parseConfig({ gateway: { port: 1 } });
    watcher = await watchConfig(file, (change) => queue.onChange(change), { debounceMs: 50, initial });
    expect(watcher.current()).toBe(initial);
    await writeFile(file, '[gateway]\nport = 1\n[execution]\nmax_runs_global = 2\n');
    expect(expectOk(await queue.next()).changed).toEqual(['execution.max_runs_global']);
  });

  it('rejects when the file is missing or bad at start', async () => {
    await expect(watchConfig(join(dir, 'missing.toml'), () => undefined)).rejects.toMatchObject({
      code: 'file_not_found',
    });
    await expect(watchConfig(join(dir, 'no-such-dir', 'switchyard.toml'), () => undefined)).rejects.toMatchObject({
      code: 'file_not_found',
    });
    await writeFile(file, '[execution]\nmax_runs_global = -1\n');
    await expect(watchConfig(file, () => undefined)).rejects.toBeInstanceOf(ConfigError);
  });

  it('stops reporting after close()', async () => {
    const seen: ConfigChange[] = [];
    const w = await watchConfig(file, (change) => seen.push(change), { debounceMs: 10 });
    w.close();
    await writeFile(file, '[execution]\nmax_runs_global = 1\n');
    // Proving an absence needs some wait; a slow machine can only make this pass wrongly, not fail.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(seen).toEqual([]);
    expect(w.current()).toStrictEqual({
      ...defaultConfig(),
      execution: { ...defaultConfig().execution, max_runs_global: 4 },
    });
  });
});
