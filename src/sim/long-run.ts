/*
 * The long simulation (`npm run sim:long`): many seeds × many runs with every fault on, one
 * child process per seed, as many at once as there are cores. Prints one line per seed and
 * the full report of every seed that broke an invariant; exits 1 if any did.
 *
 *   tsx src/sim/long-run.ts [--seeds 1-20] [--runs 10000] [--jobs N]
 */
import { fork } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { formatReport } from './report.js';
import { simulate } from './simulate.js';
import type { SimulationReport } from './simulation.js';

interface SeedResult {
  report: SimulationReport;
  wallMs: number;
}

async function child(seed: number, runs: number): Promise<void> {
  const started = performance.now();
  const report = await simulate({ seed, runs });
  const result: SeedResult = { report, wallMs: performance.now() - started };
  await new Promise<void>((resolve, reject) =>
    process.send!(result, (error: Error | null) => (error ? reject(error) : resolve())),
  );
}

function runSeed(seed: number, runs: number): Promise<SeedResult> {
  return new Promise((resolve, reject) => {
    // The child inherits this process's execArgv, so it loads TypeScript the same way.
    const worker = fork(fileURLToPath(import.meta.url), ['--child', String(seed), '--runs', String(runs)], {
      stdio: 'inherit',
    });
    let result: SeedResult | undefined;
    worker.on('message', (message) => (result = message as SeedResult));
    worker.on('error', reject);
    worker.on('exit', (code) =>
      result ? resolve(result) : reject(new Error(`seed ${seed}: the simulation process exited with code ${code}`)),
    );
  });
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      seeds: { type: 'string', default: '1-20' },
      runs: { type: 'string', default: '10000' },
      jobs: { type: 'string', default: String(availableParallelism()) },
      child: { type: 'string' },
    },
  });
  const runs = Number(values.runs);
  if (values.child !== undefined) {
    await child(Number(values.child), runs);
    return 0;
  }
  const [from, to = from] = values.seeds.split('-').map(Number) as [number, number?];
  const seeds = Array.from({ length: to - from + 1 }, (_, i) => from + i);
  const jobs = Math.max(1, Number(values.jobs));
  process.stdout.write(`simulating seeds ${from}-${to} × ${runs} runs, every fault on, ${jobs} at a time\n`);
  const results = new Map<number, SeedResult>();
  const queue = [...seeds];
  const started = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(jobs, seeds.length) }, async () => {
      for (let seed = queue.shift(); seed !== undefined; seed = queue.shift()) {
        const result = await runSeed(seed, runs);
        results.set(seed, result);
        const r = result.report;
        const verdict =
          r.violations.length === 0 ? 'ok' : `VIOLATION ${r.violations[0]!.invariant}: ${r.violations[0]!.detail}`;
        process.stdout.write(
          `seed ${seed}: ${r.completed} completed, ${r.cancelled} cancelled, ${r.failed} failed, ${r.checks} checks, ` +
            `${(r.virtualMs / 1000).toFixed(0)} s virtual in ${(result.wallMs / 1000).toFixed(1)} s — ${verdict}\n`,
        );
      }
    }),
  );
  const failed = seeds.filter((seed) => results.get(seed)!.report.violations.length > 0);
  for (const seed of failed)
    process.stdout.write(`\n${formatReport(results.get(seed)!.report, results.get(seed)!.wallMs)}`);
  process.stdout.write(
    `\n${seeds.length - failed.length}/${seeds.length} seeds held every invariant (${((performance.now() - started) / 1000).toFixed(0)} s)\n`,
  );
  return failed.length === 0 ? 0 : 1;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  },
);
