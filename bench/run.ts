/**
 * Runs the benchmarks: `tsx bench/run.ts [names...]` imports every `bench/*.bench.ts` (or those
 * whose name contains one of `names`), runs them one after another, prints one table and
 * writes `bench/results.json`.
 */

import { readdirSync, writeFileSync } from 'node:fs';
import { cpus, platform } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { BenchFigure, Benchmark } from './types.js';

const SUFFIX = '.bench.ts';
const here = dirname(fileURLToPath(import.meta.url));

function selectedBenchmarks(names: string[]): string[] {
  return readdirSync(here)
    .filter((file) => file.endsWith(SUFFIX))
    .filter((file) => names.length === 0 || names.some((name) => basename(file, SUFFIX).includes(name)))
    .sort();
}

function formatNumber(value: number | undefined): string {
  if (value === undefined) return '';
  if (value === 0 || Math.abs(value) >= 100) return value.toFixed(0);
  return value.toPrecision(3);
}

function printTable(figures: BenchFigure[]): void {
  const header = ['figure', 'value', 'baseline', 'ratio (value/baseline)', 'target'];
  const rows = figures.map((f) => [
    f.figure,
    `${formatNumber(f.value)} ${f.unit}`,
    f.baseline === undefined ? '' : `${formatNumber(f.baseline)} ${f.unit}`,
    formatNumber(f.ratio),
    f.target ?? '',
  ]);
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)));
  const line = (cells: string[]): string =>
    cells
      .map((cell, column) => cell.padEnd(widths[column]!))
      .join('  ')
      .trimEnd();
  console.log(line(header));
  console.log(widths.map((width) => '-'.repeat(width)).join('  '));
  for (const row of rows) console.log(line(row));
  for (const f of figures) if (f.note !== undefined) console.log(`note: ${f.figure}: ${f.note}`);
}

async function main(): Promise<number> {
  const files = selectedBenchmarks(process.argv.slice(2));
  if (files.length === 0) {
    console.error(`No benchmark matches ${process.argv.slice(2).join(', ')}; files are bench/*${SUFFIX}.`);
    return 1;
  }
  const figures: BenchFigure[] = [];
  for (const file of files) {
    const module = (await import(pathToFileURL(join(here, file)).href)) as { default: Benchmark };
    console.error(`running ${basename(file, SUFFIX)} …`);
    figures.push(...(await module.default()));
  }
  printTable(figures);
  const cpuList = cpus();
  const results = {
    date: new Date().toISOString(),
    machine: {
      cpus: `${cpuList[0]?.model.trim() ?? 'unknown'} × ${cpuList.length}`,
      node: process.version,
      platform: `${platform()} ${process.arch}`,
    },
    benchmarks: files.map((file) => basename(file, SUFFIX)),
    figures,
  };
  writeFileSync(join(here, 'results.json'), JSON.stringify(results, null, 2) + '\n');
  return 0;
}

process.exitCode = await main();
