/*
 * Shrinking a failure: the smallest simulation that still breaks the same invariant, found by
 * re-running the seed with fewer messages (binary search over the prefix), with fault kinds
 * switched off one at a time, and with single operations of the trace left out.
 */
import { buildScenario, describeOp, FAULT_KINDS, type FaultKind, type SimulateOptions } from './scenario.js';
import type { InvariantName } from './invariants.js';
import { runOnce, type SimulationRun } from './simulation.js';

/** The smallest failing simulation shrinking found. */
export interface ShrunkFailure {
  seed: number;
  invariant: InvariantName;
  detail: string;
  /** Messages submitted in the shrunk trace. */
  runs: number;
  /** Fault kinds it still needs; the others were switched off. */
  faults: FaultKind[];
  /** The operations applied until the violation, one per line. */
  trace: string[];
}

/** Attempts to drop single operations from a failing trace (each attempt is one small simulation). */
const OP_DROP_ATTEMPTS = 120;

/**
 * The smallest failing simulation for the first violation's invariant: fewer messages (binary
 * search over the prefix), then fault kinds switched off one at a time, then single
 * operations of the remaining trace left out, as long as the same invariant still breaks.
 */
export async function shrink(options: SimulateOptions, first: SimulationRun, tempRoot: string): Promise<ShrunkFailure> {
  const target = first.report.violations[0]!.invariant;
  const stillFails = async (
    candidate: SimulateOptions,
    dropped?: ReadonlySet<number>,
  ): Promise<SimulationRun | undefined> => {
    const run = await runOnce({ ...candidate, shrink: false }, tempRoot, dropped);
    return run.report.violations.some((v) => v.invariant === target) ? run : undefined;
  };
  let best = first;
  let current: SimulateOptions = { ...options, runs: first.report.runs };

  const fewerRuns = async () => {
    let lo = 1;
    let hi = current.runs ?? 1;
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      const run = await stillFails({ ...current, runs: mid });
      if (run) {
        hi = mid;
        best = run;
      } else lo = mid + 1;
    }
    current = { ...current, runs: hi };
  };

  await fewerRuns();
  const rates = buildScenario(current, tempRoot).rates;
  let enabled = FAULT_KINDS.filter((k) => rates[k] > 0);
  const faultsOf = (kinds: readonly FaultKind[]) =>
    Object.fromEntries(FAULT_KINDS.map((k) => [k, kinds.includes(k) ? rates[k] : false]));
  let switchedOff = false;
  for (const kind of [...enabled]) {
    const without = enabled.filter((k) => k !== kind);
    const run = await stillFails({ ...current, faults: faultsOf(without) });
    if (run) {
      enabled = without;
      current = { ...current, faults: faultsOf(without) };
      best = run;
      switchedOff = true;
    }
  }
  if (switchedOff) await fewerRuns();

  // Operations after the violation never ran; of the others, leave out what the failure does not need.
  const dropped = new Set<number>();
  for (let i = best.applied.length - 1, attempts = 0; i >= 0 && attempts < OP_DROP_ATTEMPTS; i--, attempts++) {
    const candidate = new Set([...dropped, i]);
    const run = await stillFails(current, candidate);
    if (run) {
      dropped.add(i);
      best = run;
    }
  }

  const violation = best.report.violations.find((v) => v.invariant === target) ?? best.report.violations[0]!;
  return {
    seed: options.seed,
    invariant: violation.invariant,
    detail: violation.detail,
    runs: best.applied.reduce((n, op) => n + (op.op === 'submit' ? op.messages.length : 0), 0),
    faults: enabled,
    trace: best.applied.flatMap((op) => describeOp(op).split('\n')),
  };
}
