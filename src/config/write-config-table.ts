/*
 * `npm run docs:config`: rewrites the README's configuration table from the schema, between
 * its two marker comments. test/config/config-table.test.ts fails until this has been run
 * after a key, a default or a description changed.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { renderConfigTable, replaceGeneratedSection } from './config-table.js';

const readmePath = fileURLToPath(new URL('../../README.md', import.meta.url));
const before = await readFile(readmePath, 'utf8');
const after = replaceGeneratedSection(before, renderConfigTable());
if (after === before) {
  console.log('README.md: the configuration table is up to date');
} else {
  await writeFile(readmePath, after);
  console.log('README.md: the configuration table is rewritten from src/config/schema.ts');
}
