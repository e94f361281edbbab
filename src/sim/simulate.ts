/*
 * simulate(): one seeded simulation of the engine (simulation.ts) and, when it breaks an
 * invariant, the smallest failing one (shrink.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SimulateOptions } from './scenario.js';
import { shrink } from './shrink.js';
import { runOnce, type SimulationReport } from './simulation.js';

/**
 * Runs a seeded simulation of the engine and reports what happened and which invariants
 * broke. On a violation (unless `shrink: false`) it also looks for the smallest failing
 * simulation: fewer messages, fewer fault kinds, fewer operations (shrink.ts).
 */
export async function simulate(options: SimulateOptions): Promise<SimulationReport> {
  const tempRoot = mkdtempSync(join(tmpdir(), 'switchyard-sim-'));
  try {
    const first = await runOnce(options, tempRoot);
    if (first.report.violations.length === 0 || options.shrink === false) return first.report;
    return { ...first.report, shrunk: await shrink(options, first, tempRoot) };
  } finally {
    rmSync(tempRoot, { recursive: true, force: true });
  }
}
