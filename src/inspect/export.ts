/*
 * `switchyard inspect --export DIR`: one SVG per machine (supervisor, session, run, act,
 * tool-call), drawn from the machine definitions; the README embeds them from docs/statecharts/.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { inspectedMachines } from './machines.js';
import { statechartSvg } from './svg.js';

/** Writes `<dir>/<machine>.svg` for every machine; returns the paths written. */
export async function exportStatecharts(dir: string): Promise<string[]> {
  await mkdir(dir, { recursive: true });
  const written: string[] = [];
  for (const { name, machine } of inspectedMachines) {
    const path = join(dir, `${name}.svg`);
    await writeFile(path, `${await statechartSvg(machine)}\n`);
    written.push(path);
  }
  return written;
}
