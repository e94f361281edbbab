#!/usr/bin/env node
/*
 * `npm run build` (and `prepare`, so `npm install` and `npm ci` build too): compiles src/ and
 * machines/ to dist/ with declarations, then copies every file of src/ that is not TypeScript
 * (worker scripts, the inspector's page, …) beside its compiled module, where the code finds it
 * through `new URL('./file', import.meta.url)`. dist/ is removed first, so nothing stale ships.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, readdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');

rmSync(dist, { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const compiled = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
if (compiled.status !== 0) process.exit(compiled.status ?? 1);

let copied = 0;
for (const entry of readdirSync(join(root, 'src'), { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || entry.name.endsWith('.ts')) continue;
  const from = join(entry.parentPath, entry.name);
  cpSync(from, join(dist, relative(root, from)));
  copied += 1;
}
console.log(`built ${relative(process.cwd(), dist) || '.'}/ (and copied ${copied} non-TypeScript files of src/)`);
