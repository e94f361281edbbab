/*
 * How a simulation report reads: one JSON object for machines (the same bytes for the same
 * seed), and a few lines for people — outcomes, virtual and wall-clock throughput, faults by
 * kind, checks, and on a violation the seed, the invariant and the shrunk trace.
 */
import { FAULT_KINDS } from './scenario.js';
import type { SimulationReport } from './simulation.js';

/** The report as one line of JSON: { seed, runs, completed, cancelled, failed, faults, checks, violations[, shrunk] }. */
export function reportJson(report: SimulationReport): string {
  return JSON.stringify({
    seed: report.seed,
    runs: report.runs,
    completed: report.completed,
    cancelled: report.cancelled,
    failed: report.failed,
    faults: report.faults,
    checks: report.checks,
    violations: report.violations,
    ...(report.shrunk ? { shrunk: report.shrunk } : {}),
  });
}

/** The report for a terminal; `wallMs` is how long the simulation took in real time. */
export function formatReport(report: SimulationReport, wallMs?: number): string {
  const lines: string[] = [];
  const n = (value: number) => value.toLocaleString('en-US');
  const ran = report.completed + report.cancelled + report.failed;
  const virtualSeconds = report.virtualMs / 1000;
  lines.push(`switchyard simulate — seed ${report.seed}, ${n(report.runs)} messages`);
  lines.push(
    `  runs:      ${n(ran)} ended (${n(report.completed)} completed, ${n(report.cancelled)} cancelled, ${n(report.failed)} failed); ` +
      `${n(report.steered)} messages steered into running runs, ${n(report.rejected)} rejected (lane_full); ` +
      `${n(report.claimWaits)} tool calls waited for another run's claim`,
  );
  const perVirtual = virtualSeconds > 0 ? ran / virtualSeconds : 0;
  let time = `  time:      ${virtualSeconds.toFixed(1)} s virtual in ${n(report.steps)} steps — ${perVirtual.toFixed(2)} runs/s of virtual execution`;
  if (wallMs !== undefined) {
    const perWall = wallMs > 0 ? (ran * 1000) / wallMs : 0;
    time +=
      `; ${(wallMs / 1000).toFixed(2)} s wall — ${perWall.toFixed(0)} runs/s simulated, ` +
      `${(virtualSeconds / Math.max(wallMs / 1000, 1e-9)).toFixed(0)}× real time`;
  }
  lines.push(time);
  lines.push(`  faults:    ${FAULT_KINDS.map((kind) => `${kind} ${n(report.faults[kind])}`).join(', ')}`);
  lines.push(
    `  checks:    ${n(report.checks)} invariant checks, ${report.violations.length === 0 ? 'no violations' : `${n(report.violations.length)} violations`}`,
  );
  if (report.violations.length === 0) return `${lines.join('\n')}\n`;

  for (const v of report.violations.slice(0, 10)) {
    lines.push(`  VIOLATION  ${v.invariant} at ${v.atMs} ms (after ${v.afterOps} operations): ${v.detail}`);
  }
  if (report.violations.length > 10) lines.push(`  … and ${report.violations.length - 10} more`);
  lines.push(`  reproduce: switchyard simulate --seed ${report.seed} --runs ${report.runs}`);
  const shrunk = report.shrunk;
  if (shrunk) {
    lines.push('');
    lines.push(`  seed ${shrunk.seed} breaks "${shrunk.invariant}": ${shrunk.detail}`);
    lines.push(`  minimal trace (${shrunk.runs} messages; faults needed: ${shrunk.faults.join(', ') || 'none'}):`);
    for (const step of shrunk.trace) lines.push(`    ${step}`);
  }
  return `${lines.join('\n')}\n`;
}
