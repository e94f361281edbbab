/*
 * `switchyard inspect --export DIR`: one SVG per machine (limiter, session, run, act,
 * tool-call), drawn from the machine definitions; the README embeds them from docs/statecharts/.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { statechartCatalog } from './catalog.js';

/** Writes `<dir>/<machine>.svg` for every machine; returns the paths written. */
export async function exportStatecharts(dir: string): Promise<string[]> {
  await mkdir(dir, { recursive: true });
  const written: string[] = [];
  for (const { name, svg } of await statechartCatalog()) {
    const path = join(dir, `${name}.svg`);
    await writeFile(path, `${svg}\n`);
    written.push(path);
  }
  return written;
}
