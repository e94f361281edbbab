/*
 * `switchyard simulate --seed N --runs M [--json]`: runs one seeded simulation and prints its
 * report (or one JSON object); with --from-store, --workload or --compare, a deployment
 * simulation instead (deployment-cli.ts). Exit code 0 when every invariant held, 1 on a violation, 2 on
 * bad usage.
 */
import { parseArgs } from 'node:util';
import { DEPLOYMENT_USAGE, isDeploymentCommand, runDeploymentCommand } from './deployment-cli.js';
import { formatReport, reportJson } from './report.js';
import { FAULT_KINDS, type FaultKind, type SimulateOptions } from './scenario.js';
import { simulate } from './simulate.js';

export const SIMULATE_USAGE = `usage: switchyard simulate [--seed N] [--runs M] [--json] [options]

Drives a real engine (scripted model, synthetic tools, memory store, virtual time) through a
seeded scenario with faults, checking the engine's invariants after every step. The same seed
gives the same report.

options:
  --seed N             seed of the scenario (default 1)
  --runs M             messages to submit (default 500)
  --sessions N         sessions (default 6)
  --agents N           agents (default 3)
  --faults LIST        "all" (default), "none", or a comma-separated list of the kinds to inject:
                       ${FAULT_KINDS.join(', ')}
  --store KIND         memory (default) or lowdb (files in a temp dir, reopened at every restart)
  --json               print one JSON object { seed, runs, completed, cancelled, failed, faults,
                       checks, violations } instead of the text report
  --no-shrink          on a violation, do not look for a smaller failing scenario
  --debug-lying-claim  deliberately break the setup (the write tool claims shared), to see a violation
  --debug-early-answer deliberately break the setup (the store says writes are durable before they are), to see acknowledged messages lost at a crash

Your own deployment (a workload from stored run logs against a candidate configuration):

${DEPLOYMENT_USAGE}`;

/** Where the command writes (tests pass their own). */
export interface SimulateIo {
  out(text: string): void;
  err(text: string): void;
}

const processIo: SimulateIo = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
};

class UsageError extends Error {}

export async function runSimulateCommand(argv: string[], io: SimulateIo = processIo): Promise<number> {
  if (isDeploymentCommand(argv)) return runDeploymentCommand(argv, io);
  let parsed: ParsedArgs;
  try {
    parsed = parseSimulateArgs(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    io.err(`switchyard simulate: ${error.message}\n\n${SIMULATE_USAGE}`);
    return 2;
  }
  if (parsed === 'help') {
    io.out(SIMULATE_USAGE);
    return 0;
  }
  const started = performance.now();
  const report = await simulate(parsed.options);
  const wallMs = performance.now() - started;
  io.out(parsed.json ? `${reportJson(report)}\n` : formatReport(report, wallMs));
  return report.violations.length === 0 ? 0 : 1;
}

type ParsedArgs = 'help' | { options: SimulateOptions; json: boolean };

function parseSimulateArgs(argv: string[]): ParsedArgs {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      strict: true,
      options: {
        seed: { type: 'string' },
        runs: { type: 'string' },
        sessions: { type: 'string' },
        agents: { type: 'string' },
        faults: { type: 'string' },
        store: { type: 'string' },
        json: { type: 'boolean' },
        'no-shrink': { type: 'boolean' },
        'debug-lying-claim': { type: 'boolean' },
        'debug-early-answer': { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  if (values.help) return 'help';
  const options: SimulateOptions = {
    seed: integer(values.seed, '--seed', 1, Number.MIN_SAFE_INTEGER),
    runs: integer(values.runs, '--runs', 500, 1),
    sessions: integer(values.sessions, '--sessions', 6, 1),
    agents: integer(values.agents, '--agents', 3, 1),
    faults: faultsOption(values.faults),
    shrink: !values['no-shrink'],
    store: storeOption(values.store),
    ...(values['debug-lying-claim'] || values['debug-early-answer']
      ? {
          debug: {
            lyingWriteClaim: values['debug-lying-claim'] === true,
            earlyAnswer: values['debug-early-answer'] === true,
          },
        }
      : {}),
  };
  return { options, json: values.json === true };
}

function integer(value: string | undefined, flag: string, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!Number.isSafeInteger(parsed) || parsed < min)
    throw new UsageError(`${flag} must be an integer >= ${min}, not "${value}"`);
  return parsed;
}

function storeOption(value: string | undefined): 'memory' | 'lowdb' {
  if (value === undefined || value === 'memory' || value === 'lowdb') return value ?? 'memory';
  throw new UsageError(`--store must be memory or lowdb, not "${value}"`);
}

function faultsOption(value: string | undefined): SimulateOptions['faults'] {
  if (value === undefined || value === 'all') return 'all';
  if (value === 'none') return 'none';
  const kinds = value
    .split(',')
    .map((k) => k.trim())
    .filter((k) => k !== '');
  const unknown = kinds.filter((k) => !(FAULT_KINDS as readonly string[]).includes(k));
  if (unknown.length > 0)
    throw new UsageError(`--faults: unknown fault kinds ${unknown.join(', ')}; known: ${FAULT_KINDS.join(', ')}`);
  return Object.fromEntries(FAULT_KINDS.map((k) => [k, kinds.includes(k)])) as Record<FaultKind, boolean>;
}
