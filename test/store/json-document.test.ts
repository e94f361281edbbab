/*
 * The store's documents are lowdb documents over our adapter: read, written and updated
 * through lowdb's API, the file private from its first byte, its text as the store always
 * wrote it, a damaged file refused with what to do.
 */
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Low } from 'lowdb';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { jsonDocument, readJsonDocument } from '../../src/store/json-document.js';
import { tempDirs } from '../support/temp-dirs.js';

const tempDir = tempDirs();
const Lanes = z.object({ lanes: z.array(z.tuple([z.string(), z.array(z.string())])) });

describe('a store document', () => {
  it('is a lowdb Low: read (null when absent), written and updated through its API, 0600, indented', async () => {
    const path = join(await tempDir(), 'lanes.json');
    const document = jsonDocument(path, { schema: Lanes, sync: true });
    expect(document).toBeInstanceOf(Low);
    await document.read();
    expect(document.data).toBeNull();
    document.data = { lanes: [['bob', ['r1']]] };
    await document.write();
    await document.update((data) => data!.lanes.push(['alice', ['r2']]));
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect(await readFile(path, 'utf8')).toBe(
      `${JSON.stringify(
        {
          lanes: [
            ['bob', ['r1']],
            ['alice', ['r2']],
          ],
        },
        null,
        2,
      )}\n`,
    );
    expect(await readJsonDocument(path, Lanes)).toEqual({
      lanes: [
        ['bob', ['r1']],
        ['alice', ['r2']],
      ],
    });
  });

  it('refuses a file that is not what the store wrote, naming it', async () => {
    const path = join(await tempDir(), 'lanes.json');
    await writeFile(path, '{"lanes": 3}');
    await expect(readJsonDocument(path, Lanes)).rejects.toMatchObject({ code: 'corrupt_file', details: { path } });
  });
});
