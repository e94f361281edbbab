/*
 * The store and the token are private to the server's user: every file 0600, every directory
 * 0700, whatever the umask, including a data directory that existed with wider permissions and
 * a temp file a crash left behind.
 */
import { readdirSync, statSync } from 'node:fs';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ensureToken } from '../../src/gateway/auth-token.js';
import { LowdbStore } from '../../src/store/lowdb-store.js';
import { runEvent, runRecord } from './store-conformance.js';
import { tempDirs } from '../support/temp-dirs.js';

let base: string;
let umask: number;
const tempDir = tempDirs('switchyard-store-modes-', 'afterEach');

beforeEach(async () => {
  base = await tempDir();
  // The most permissive umask: whatever the modes are, they are ours, not the umask's.
  umask = process.umask(0);
});
afterEach(async () => {
  process.umask(umask);
});

/** Every entry under `root` (itself included) with its permission bits, as `relative path: mode`. */
function modes(root: string): Record<string, string> {
  const found: Record<string, string> = { '.': (statSync(root).mode & 0o777).toString(8) };
  const walk = (dir: string, prefix: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      found[prefix + entry.name] = (statSync(path).mode & 0o777).toString(8);
      if (entry.isDirectory()) walk(path, `${prefix}${entry.name}/`);
    }
  };
  walk(root, '');
  return found;
}

async function fillStore(dir: string): Promise<LowdbStore> {
  const store = await LowdbStore.open(dir);
  store.saveRun(runRecord('r1', 'running'));
  await store.appendEvent(runEvent('r1', 's1', 1, 1));
  await store.appendMessages('s1', [{ role: 'user', content: 'hello' }]);
  store.saveLane('s1', [{ runId: 'r2', viaInterrupt: false }]);
  store.saveGrants?.('s1', ['fingerprint']);
  await store.flush();
  return store;
}

describe('store and token permissions', () => {
  it('every file the store creates is 0600 and every directory 0700', async () => {
    const dir = join(base, 'data');
    const store = await fillStore(dir);
    try {
      const found = modes(dir);
      expect(Object.keys(found).length).toBeGreaterThan(8);
      const dirs = Object.entries(found).filter(([path]) => statSync(join(dir, path)).isDirectory());
      const files = Object.entries(found).filter(([path]) => !statSync(join(dir, path)).isDirectory());
      expect(dirs.filter(([, mode]) => mode !== '700')).toEqual([]);
      expect(files.filter(([, mode]) => mode !== '600')).toEqual([]);
      expect(files.map(([path]) => path)).toEqual(
        expect.arrayContaining(['LOCK', 'switchyard-store.json', 'open-runs.json', 'lanes.json', 'grants.json']),
      );
    } finally {
      await store.close();
    }
  });

  it('a data directory that existed with wider permissions is made 0700 when the store opens', async () => {
    const dir = join(base, 'data');
    await mkdir(dir, { mode: 0o755 });
    const store = await LowdbStore.open(dir);
    await store.close();
    expect((statSync(dir).mode & 0o777).toString(8)).toBe('700');
  });

  it('a temp file a crash left with wider permissions does not pass them on', async () => {
    const dir = join(base, 'data');
    const store = await fillStore(dir);
    await store.close();
    const leftover = join(dir, '.open-runs.json.tmp');
    await writeFile(leftover, 'half a write');
    await chmod(leftover, 0o644);
    const reopened = await LowdbStore.open(dir);
    try {
      reopened.saveRun(runRecord('r3', 'running'));
      await reopened.flush();
      expect((statSync(join(dir, 'open-runs.json')).mode & 0o777).toString(8)).toBe('600');
    } finally {
      await reopened.close();
    }
  });

  it('the token file is 0600 in a 0700 data directory', async () => {
    const dir = join(base, 'gateway-data');
    const { path } = await ensureToken(dir);
    expect(modes(dir)).toEqual({ '.': '700', token: '600' });
    expect(path).toBe(join(dir, 'token'));
  });
});
