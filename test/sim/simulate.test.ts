/*
 * The deterministic simulator as a test: fixed seeds drive a real engine through hundreds of
 * runs with faults (tool errors and hangs, model errors and hangs, deadlines, cancels, session
 * stops, interrupts, steers, limit raises and shrinks, lane overflow) and every invariant must
 * hold; the same seed gives the same report byte for byte; a deliberately broken setup is
 * caught and shrunk; and `switchyard simulate` prints one JSON object and fails on a violation.
 */
import { describe, expect, it } from 'vitest';
import { FAULT_KINDS, runSimulateCommand, simulate } from '../../src/sim/index.js';
import type { SimulateOptions, SimulationReport } from '../../src/sim/index.js';

const SEEDS = Array.from({ length: 20 }, (_, i) => i + 1);
const RUNS = 500;
const base = (seed: number, runs = RUNS): SimulateOptions => ({ seed, runs, shrink: false });

describe('simulate()', () => {
  it(`holds every invariant over ${SEEDS.length} seeds × ${RUNS} runs with every fault on, and injects every kind of fault`, async () => {
    const reports: SimulationReport[] = [];
    for (const seed of SEEDS) reports.push(await simulate(base(seed)));

    const violations = reports.flatMap((r) =>
      r.violations.map((v) => `seed ${r.seed}: ${v.invariant} at ${v.atMs} ms — ${v.detail}`),
    );
    expect(violations).toEqual([]);
    for (const report of reports) {
      expect(report.runs).toBe(RUNS);
      expect(
        report.completed + report.cancelled + report.failed + report.steered + report.rejected,
      ).toBeGreaterThanOrEqual(RUNS);
      expect(report.checks).toBeGreaterThan(RUNS);
    }
    const injected = Object.fromEntries(
      FAULT_KINDS.map((kind) => [kind, reports.reduce((n, r) => n + r.faults[kind], 0)]),
    );
    const missed = FAULT_KINDS.filter((kind) => injected[kind] === 0);
    expect(missed, `never injected; injected: ${JSON.stringify(injected)}`).toEqual([]);
    expect(reports.every((r) => r.completed > 0 && r.cancelled > 0 && r.failed > 0)).toBe(true);
    // Runs sharing a workspace did wait for each other's claims.
    expect(reports.every((r) => r.claimWaits > 0)).toBe(true);
  }, 120_000);

  it('gives the same report, byte for byte, for the same seed — crashes and restarts included', async () => {
    const once = JSON.stringify(await simulate(base(4, 300)));
    expect(JSON.parse(once).faults.crash).toBeGreaterThan(0);
    expect(JSON.stringify(await simulate(base(4, 300)))).toBe(once);
    expect(JSON.stringify(await simulate(base(5, 300)))).not.toBe(once);
  }, 60_000);

  it('runs on the lowdb store too, reopening it from its files at every restart', async () => {
    const report = await simulate({ seed: 1, runs: 60, store: 'lowdb', shrink: false });
    expect(report.violations).toEqual([]);
    expect(report.faults.crash).toBeGreaterThan(0);
    expect(report.completed).toBeGreaterThan(0);
  }, 60_000);

  it('catches an engine that answers before its writes are durable: acknowledged messages lost at a crash', async () => {
    // The simulated disk completes writes one macrotask after they are asked for and a crash
    // loses the rest, as a SIGKILL does. With a store that claims durability at once, submit
    // answers early — and the restart invariant sees acknowledged messages vanish.
    const seeds = [1, 2, 3, 4, 5, 6];
    const lying = await Promise.all(
      seeds.map((seed) => simulate({ seed, runs: 300, shrink: false, debug: { earlyAnswer: true } })),
    );
    const lost = lying.flatMap((r) => r.violations).filter((v) => v.invariant === 'restart-lost');
    expect(lost.length, 'the early answer is caught').toBeGreaterThan(0);
    const honest = await Promise.all(seeds.map((seed) => simulate({ seed, runs: 300, shrink: false })));
    expect(honest.flatMap((r) => r.violations)).toEqual([]);
    expect(honest.reduce((n, r) => n + r.faults.crash, 0)).toBeGreaterThan(0);
  }, 120_000);

  it('catches a tool whose claim lies (a write that claims shared) and shrinks the failure to a short trace', async () => {
    const report = await simulate({ seed: 6, runs: 200, faults: 'none', debug: { lyingWriteClaim: true } });
    const first = report.violations[0];
    expect(first?.invariant).toBe('tool-overlap');
    const shrunk = report.shrunk!;
    expect(shrunk).toMatchObject({ seed: 6, invariant: 'tool-overlap', faults: [] });
    expect(shrunk.runs).toBeLessThan(first!.afterOps);
    expect(shrunk.trace.length).toBeGreaterThan(0);
    expect(shrunk.trace.length).toBeLessThan(first!.afterOps);
    expect(shrunk.trace.join('\n')).toMatch(/write \/sim\//);
  }, 60_000);

  it("catches runs that share a workspace and ignore each other's claims (cross_run_claims off), and shrinks it to two messages", async () => {
    const onlyShared = Object.fromEntries(FAULT_KINDS.map((kind) => [kind, kind === 'sharedWorkspace' ? 0.6 : false]));
    const report = await simulate({ seed: 6, runs: 200, faults: onlyShared, debug: { ignoreCrossRunClaims: true } });
    expect(report.violations[0]?.invariant).toBe('cross-run-overlap');
    expect(report.shrunk).toMatchObject({ seed: 6, invariant: 'cross-run-overlap', faults: ['sharedWorkspace'] });
    expect(report.shrunk!.trace).toHaveLength(2);
    expect(report.shrunk!.trace.every((line) => line.includes('workspace=shared-'))).toBe(true);
    const honest = await simulate({ seed: 6, runs: 200, faults: onlyShared, shrink: false });
    expect(honest.violations).toEqual([]);
    expect(honest.claimWaits).toBeGreaterThan(0);
  }, 60_000);
});

describe('switchyard simulate', () => {
  const capture = () => {
    const io = {
      stdout: '',
      stderr: '',
      out: (text: string) => void (io.stdout += text),
      err: (text: string) => void (io.stderr += text),
    };
    return io;
  };

  it('--json prints one JSON object and exits non-zero when an invariant broke', async () => {
    const io = capture();
    const code = await runSimulateCommand(
      ['--seed', '6', '--runs', '100', '--json', '--faults', 'none', '--no-shrink', '--debug-lying-claim'],
      io,
    );
    expect(code).toBe(1);
    expect(io.stdout.trim().split('\n')).toHaveLength(1);
    const report = JSON.parse(io.stdout);
    expect(Object.keys(report)).toEqual([
      'seed',
      'runs',
      'completed',
      'cancelled',
      'failed',
      'faults',
      'checks',
      'violations',
    ]);
    expect(report).toMatchObject({ seed: 6, runs: 100 });
    expect(Object.keys(report.faults)).toEqual([...FAULT_KINDS]);
    expect(report.violations[0].invariant).toBe('tool-overlap');
  }, 30_000);

  it('exits 0 with the same report when every invariant held, and prints a readable report without --json', async () => {
    const json = capture();
    expect(await runSimulateCommand(['--seed', '2', '--runs', '20', '--faults', 'none', '--json'], json)).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ seed: 2, runs: 20, violations: [] });
    const text = capture();
    expect(await runSimulateCommand(['--seed', '2', '--runs', '20', '--faults', 'none'], text)).toBe(0);
    expect(text.stdout).toMatch(/runs\/s of virtual execution/);
    expect(text.stdout).toMatch(/faults: +toolError 0,/);
    expect(text.stdout).toMatch(/invariant checks, no violations/);
  }, 30_000);

  it('prints the seed, the invariant and the minimal trace on a violation', async () => {
    const io = capture();
    expect(
      await runSimulateCommand(['--seed', '6', '--runs', '40', '--faults', 'none', '--debug-lying-claim'], io),
    ).toBe(1);
    expect(io.stdout).toMatch(/seed 6 breaks "tool-overlap"/);
    expect(io.stdout).toMatch(/minimal trace \(\d+ messages; faults needed: none\):\n {4}@\d+ms submit m\d+/);
  }, 60_000);

  it('rejects bad usage with exit code 2', async () => {
    const io = capture();
    expect(await runSimulateCommand(['--runs', 'many'], io)).toBe(2);
    expect(io.stderr).toMatch(/--runs must be an integer/);
    expect(await runSimulateCommand(['--faults', 'gremlins'], capture())).toBe(2);
    expect(await runSimulateCommand(['--frobnicate'], capture())).toBe(2);
  });
});
