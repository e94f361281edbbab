/*
 * The README's configuration table is generated from the schema (`npm run docs:config`): these
 * tests fail when the two differ, when a key has no description, or when a description
 * repeats a default that only the schema may hold. The renderer itself is checked on a small
 * schema, one row per kind of key.
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  CONFIG_TABLE_END,
  CONFIG_TABLE_START,
  configKeyRows,
  generatedSectionOf,
  renderConfigTable,
  replaceGeneratedSection,
} from '../../src/config/config-table.js';

const readmePath = fileURLToPath(new URL('../../README.md', import.meta.url));

describe('the README configuration table', () => {
  it('is what the schema generates (run `npm run docs:config` after changing a key)', async () => {
    const readme = await readFile(readmePath, 'utf8');
    const section = generatedSectionOf(readme);
    expect(section, `README.md lacks the markers ${CONFIG_TABLE_START} … ${CONFIG_TABLE_END}`).toBeDefined();
    expect(section).toBe(renderConfigTable());
  });

  it('describes every key and every table of the schema', () => {
    const undescribed = configKeyRows()
      .filter((row) => row.description.trim() === '')
      .map((row) => (row.isTable ? `[${row.table}]` : `[${row.table}] ${row.key}`));
    expect(undescribed, 'give these a .describe() in src/config/schema.ts').toEqual([]);
  });

  it('takes every default from the schema: no description names one', () => {
    // "default 60", "(default: 8)", "defaults to …" in a description would be a second copy that can drift.
    const restated = configKeyRows()
      .filter((row) => /\bdefaults?\b\s*(?:is|to|:|=)?\s*[`"'\d[{(]|\(default\b/i.test(row.description))
      .map((row) => `[${row.table}] ${row.key}: ${row.description}`);
    expect(restated, 'drop the default from these descriptions; the table shows the one in .default()').toEqual([]);
  });
});

describe('renderConfigTable on a small schema', () => {
  const schema = z
    .object({
      limits: z
        .object({
          count: z.number().int().min(1).default(4).describe('How many.'),
          wait_seconds: z.number().positive().default(1.5).describe('How long, in seconds.'),
          port: z.number().int().min(0).max(65535).default(80).describe('Where.'),
          mode: z.enum(['fast', 'slow']).default('fast').describe('Which way.'),
          name: z.string().min(1).optional().describe('A name; unset by default.'),
          on: z.boolean().default(false).describe('Whether.'),
          tags: z.array(z.string()).default(['a']).describe('Labels.'),
          overrides: z
            .record(z.string(), z.enum(['yes', 'no']))
            .default({})
            .describe('Per name.'),
          rules: z
            .array(z.object({ pattern: z.string().describe('What to match.') }).strict())
            .default([])
            .describe('Extra rules.'),
        })
        .strict()
        .prefault({})
        .describe('The limits.'),
      peers: z
        .record(z.string(), z.object({ url: z.string().describe('Where the peer is.') }).strict())
        .default({})
        .describe('Peers by id.'),
    })
    .strict();

  const rows = configKeyRows(schema, ['limits']).map(({ table, key, type, default: value, applies, description }) =>
    [table, key, type, value, applies, description].join(' ; '),
  );

  it.each([
    ['a table header, live when its section is hot', 'limits ;  ; table ;  ; live ; The limits.'],
    ['an integer with a lower bound', 'limits ; count ; integer ≥ 1 ; `4` ; live ; How many.'],
    ['a positive number', 'limits ; wait_seconds ; number > 0 ; `1.5` ; live ; How long, in seconds.'],
    ['an integer between two bounds', 'limits ; port ; integer from 0 to 65535 ; `80` ; live ; Where.'],
    ['an enum, its values as TOML writes them', 'limits ; mode ; `"fast"`, `"slow"` ; `"fast"` ; live ; Which way.'],
    ['an optional key without a default', 'limits ; name ; non-empty string ; — ; live ; A name; unset by default.'],
    ['a boolean', 'limits ; on ; boolean ; `false` ; live ; Whether.'],
    ['an array of scalars', 'limits ; tags ; array of strings ; `["a"]` ; live ; Labels.'],
    ['a table of scalars by name', 'limits ; overrides ; table of name → `"yes"`, `"no"` ; `{}` ; live ; Per name.'],
    [
      'an array of tables, after the keys of its parent',
      '[limits.rules] ;  ; array of tables ; `[]` ; live ; Extra rules.',
    ],
    ['a required key of an array of tables', '[limits.rules] ; pattern ; string ; required ; live ; What to match.'],
    ['tables by id, restart when not hot', 'peers.<id> ;  ; tables by id ;  ; restart ; Peers by id.'],
    ['a required key of a table by id', 'peers.<id> ; url ; string ; required ; restart ; Where the peer is.'],
  ])('%s', (_, row) => {
    expect(rows).toContain(row);
  });

  it('keeps schema order, with sub-tables after the keys of their parent', () => {
    expect(rows.map((row) => row.split(' ; ').slice(0, 2).join(' ').trim())).toEqual([
      'limits',
      'limits count',
      'limits wait_seconds',
      'limits port',
      'limits mode',
      'limits name',
      'limits on',
      'limits tags',
      'limits overrides',
      '[limits.rules]',
      '[limits.rules] pattern',
      'peers.<id>',
      'peers.<id> url',
    ]);
  });

  it('merges the tables of a discriminated union: every key once, every kind in one list', () => {
    const provider = z
      .record(
        z.string(),
        z.discriminatedUnion('kind', [
          z.object({ kind: z.literal('http').describe('Which.'), url: z.string().describe('Where.') }).strict(),
          z
            .object({ kind: z.literal('file').describe('Which.'), path: z.string().optional().describe('What.') })
            .strict(),
          z.object({ kind: z.enum(['a', 'b']).describe('Which.'), url: z.string().describe('Where.') }).strict(),
        ]),
      )
      .default({})
      .describe('Providers.');
    const rows = configKeyRows(z.object({ providers: provider }).strict(), []).map((row) => [
      row.key,
      row.type,
      row.default,
    ]);
    expect(rows).toEqual([
      ['', 'tables by id', ''],
      ['kind', '`"http"`, `"file"`, `"a"`, `"b"`', 'required'],
      ['url', 'string', '—'],
      ['path', 'string', '—'],
    ]);
  });

  it('renders a nullable key without its null, and a key that takes a value or a table as such', () => {
    const schema = z
      .object({
        s: z
          .object({
            maybe: z.string().nullable().default(null).describe('Unset unless given.'),
            choice: z
              .union([z.enum(['auto', 'none']), z.object({ name: z.string() })])
              .optional()
              .describe('A mode or a named one.'),
          })
          .strict()
          .describe('S.'),
      })
      .strict();
    expect(configKeyRows(schema, []).map((row) => [row.key, row.type, row.default])).toEqual([
      ['', 'table', ''],
      ['maybe', 'string', '—'],
      ['choice', '`"auto"`, `"none"` or table', '—'],
    ]);
  });

  it('renders headers in bold and escapes pipes, so no cell breaks its row', () => {
    const table = renderConfigTable(
      z.object({ s: z.object({ k: z.string().default('a|b').describe('x | y') }).strict() }).strict(),
    );
    expect(table.split('\n')).toEqual([
      '| key | type | default | applies | what it does |',
      '|---|---|---|---|---|',
      '| **`[s]`** | table |  | restart |  |',
      '| `k` | string | `"a\\|b"` | restart | x \\| y |',
    ]);
  });
});

describe('replaceGeneratedSection', () => {
  it('replaces what lies between the markers and keeps the rest', () => {
    const document = `intro\n${CONFIG_TABLE_START}\nold table\n${CONFIG_TABLE_END}\noutro\n`;
    const replaced = replaceGeneratedSection(document, 'new table');
    expect(replaced).toBe(`intro\n${CONFIG_TABLE_START}\nnew table\n${CONFIG_TABLE_END}\noutro\n`);
    expect(generatedSectionOf(replaced)).toBe('new table');
    expect(replaceGeneratedSection(replaced, 'new table')).toBe(replaced);
  });

  it('refuses a document without the markers, and says where they go', () => {
    expect(() => replaceGeneratedSection('no markers here', 'table')).toThrow(
      /put .*config-table:start.* where the table belongs/,
    );
    expect(generatedSectionOf('no markers here')).toBeUndefined();
  });
});
