/*
 * The file store's on-disk format did not change when its documents became lowdb documents:
 * a store directory written by the code before (fixtures/store-written-before-lowdb, made at
 * commit 298824f by running an engine on it — a completed run with a tool batch and a steer,
 * a run cancelled by close() with a message waiting in its lane — then saving grants; what
 * that code read back is in its expected.json) opens, reads the same, and a document written
 * again with the same content is the same bytes.
 */
import { chmod, cp, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { LowdbStore } from '../../src/store/lowdb-store.js';
import { tempDirs } from '../support/temp-dirs.js';

const fixture = fileURLToPath(new URL('./fixtures/store-written-before-lowdb/', import.meta.url));
const tempDir = tempDirs();

describe('a store written before lowdb came back', () => {
  it('opens and reads what the code before read from it', async () => {
    const dir = join(await tempDir(), 'store');
    await cp(join(fixture, 'store'), dir, { recursive: true });
    const expected = JSON.parse(await readFile(join(fixture, 'expected.json'), 'utf8')) as Record<string, unknown> & {
      runIds: Record<string, string>;
    };
    const { runIds } = expected;
    const store = await LowdbStore.open(dir);
    try {
      const read = {
        runIds,
        doneRun: await store.getRun(runIds.done!),
        doneEvents: await store.readEvents(runIds.done!),
        steer: await store.getSteer(runIds.steer!),
        conversation: await store.readConversation('alice'),
        openRuns: (await store.openRuns()).map((r) => r.runId),
        lanes: await store.readLanes(),
        grants: await store.readGrants(),
        page: await store.queryRuns({ limit: 10 }),
      };
      expect(JSON.parse(JSON.stringify(read))).toEqual(expected);
    } finally {
      await store.close();
    }
  });

  it('writes its documents again byte for byte as the code before did, 0600', async () => {
    const dir = join(await tempDir(), 'store');
    await cp(join(fixture, 'store'), dir, { recursive: true });
    const before = (name: string) => readFile(join(fixture, 'store', name), 'utf8');
    // As a checkout leaves it: the rewrite, not the copy, makes it private.
    await chmod(join(dir, 'lanes.json'), 0o644);
    const store = await LowdbStore.open(dir);
    const lanes = await store.readLanes();
    const grants = await store.readGrants();
    await store.saveLane('bob', lanes.bob!);
    await store.saveGrants('alice', grants.alice!);
    await store.close();
    for (const name of ['lanes.json', 'grants.json', 'switchyard-store.json', 'open-runs.json']) {
      expect(await readFile(join(dir, name), 'utf8'), name).toBe(await before(name));
    }
    expect((await stat(join(dir, 'lanes.json'))).mode & 0o777).toBe(0o600);
  });
});
