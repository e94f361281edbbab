/*
 * `switchyard simulate --from-store DIR | --workload FILE …`: a workload from stored run logs,
 * replayed against one candidate configuration or two side by side (docs/simulate.md). Exit
 * code 0 when every invariant held, 1 on a violation, 2 on bad usage.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import { parseArgs } from 'node:util';
import { defaultConfig, loadConfig, type Config } from '../config/index.js';
import { LowdbStore } from '../store/lowdb-store.js';
import { RedisStore } from '../store/redis-store.js';
import { fmtMs, deploymentHtml, type LabelledReport } from './deployment-html.js';
import type { DeploymentMetrics } from './deployment-metrics.js';
import { deriveWorkload } from './derive-workload.js';
import { simulateDeployment, type DeploymentOptions } from './simulate-deployment.js';
import type { DeploymentFaults } from './workload-scenario.js';
import { parseWorkload, type Workload } from './workload.js';

export const DEPLOYMENT_USAGE = `usage: switchyard simulate --from-store DIR --save-workload FILE
       switchyard simulate --from-redis URL [--key-prefix P] --save-workload FILE
       switchyard simulate --workload FILE --config candidate.toml [options]
       switchyard simulate --workload FILE --compare base.toml candidate.toml [--report report.html]

Replays your deployment's traffic in virtual time against the real engine with a candidate
configuration ([execution] and [tool_service]) and reports waits, latency percentiles,
rejections, utilisation and the invariant checks (docs/simulate.md).

options:
  --from-store DIR      derive the workload from the run logs of a lowdb store directory
  --from-redis URL      derive it from the run logs of a Redis store (redis://host:port/db)
  --key-prefix P        with --from-redis: the store's [store] key_prefix (default switchyard:)
  --save-workload FILE  write the derived workload (JSON, no message text) and stop unless a config is given
  --workload FILE       a workload file (as saved, or edited)
  --config FILE         the candidate configuration (TOML); without it, the defaults
  --compare BASE CAND   two configurations against the same seeded workload, side by side
  --scale N[x]          multiply every arrival rate (default 1)
  --duration D          arrivals for this long: 90s, 30m, 1h (default 1h)
  --start-hour H        hour of day (UTC) the period starts at (default: the busiest)
  --faults LIST         crash:N/h (process crashes per hour), model-errors:P% (failed model turns)
  --busy-policy P       send every message with this busy policy instead of its recorded one
  --processes N         a cluster of N gateway processes sharing the store and the limiter;
                        crash:N/h then kills one process, the others take its sessions over
  --seed N              seed (default 1)
  --report FILE         also write a self-contained HTML report with plots
  --json                print the report(s) as JSON
`;

export interface DeploymentIo {
  out(text: string): void;
  err(text: string): void;
}

export class DeploymentUsageError extends Error {}

/** True when argv asks for a deployment simulation rather than the engine's own seeded one. */
export function isDeploymentCommand(argv: readonly string[]): boolean {
  return argv.some((a) =>
    ['--from-store', '--from-redis', '--workload', '--compare', '--save-workload'].includes(a.split('=')[0]!),
  );
}

export async function runDeploymentCommand(argv: string[], io: DeploymentIo): Promise<number> {
  let parsed: DeploymentArgs;
  try {
    parsed = parseDeploymentArgs(argv);
  } catch (error) {
    if (!(error instanceof DeploymentUsageError)) throw error;
    io.err(`switchyard simulate: ${error.message}\n\n${DEPLOYMENT_USAGE}`);
    return 2;
  }
  let workload: Workload;
  if (parsed.fromStore !== undefined || parsed.fromRedis !== undefined) {
    const store =
      parsed.fromRedis !== undefined
        ? await RedisStore.open({
            url: parsed.fromRedis,
            ...(parsed.keyPrefix !== undefined ? { keyPrefix: parsed.keyPrefix } : {}),
          })
        : await LowdbStore.open(parsed.fromStore!);
    try {
      workload = await deriveWorkload(store);
    } finally {
      await store.close();
    }
    if (parsed.saveWorkload !== undefined) {
      writeFileSync(parsed.saveWorkload, `${JSON.stringify(workload, null, 2)}\n`);
      io.out(
        `workload of ${workload.source.runs} runs (${Object.keys(workload.agents).length} agents, ` +
          `${Object.keys(workload.tools).length} tools) written to ${parsed.saveWorkload}\n`,
      );
    }
    if (parsed.configs.length === 0 && parsed.saveWorkload !== undefined) return 0;
  } else {
    const file = parsed.workload!;
    workload = parseWorkload(JSON.parse(readFileSync(file, 'utf8')), file);
  }
  const configs = parsed.configs.length > 0 ? parsed.configs : [undefined];
  const reports: LabelledReport[] = [];
  for (const path of configs) {
    const config: Config = path === undefined ? defaultConfig() : await loadConfig(path);
    const started = performance.now();
    const report = await simulateDeployment(workload, config, parsed.options);
    const wallMs = performance.now() - started;
    const label = path === undefined ? 'defaults' : basename(path);
    reports.push({ label, report });
    if (!parsed.json)
      io.out(`simulated ${fmtMs(report.virtualMs)} of virtual time for ${label} in ${(wallMs / 1000).toFixed(1)} s\n`);
  }
  if (parsed.report !== undefined) writeFileSync(parsed.report, deploymentHtml(reports));
  io.out(
    parsed.json
      ? `${JSON.stringify(reports.length === 1 ? reports[0]!.report : Object.fromEntries(reports.map((r) => [r.label, r.report])))}\n`
      : formatDeployment(reports),
  );
  if (parsed.report !== undefined && !parsed.json) io.out(`report written to ${parsed.report}\n`);
  return reports.every((r) => r.report.invariants.violations.length === 0) ? 0 : 1;
}

interface DeploymentArgs {
  fromStore?: string;
  fromRedis?: string;
  keyPrefix?: string;
  workload?: string;
  saveWorkload?: string;
  configs: string[];
  options: DeploymentOptions;
  report?: string;
  json: boolean;
}

function parseDeploymentArgs(argv: string[]): DeploymentArgs {
  let values;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: true,
      options: {
        'from-store': { type: 'string' },
        'from-redis': { type: 'string' },
        'key-prefix': { type: 'string' },
        processes: { type: 'string' },
        'save-workload': { type: 'string' },
        workload: { type: 'string' },
        config: { type: 'string' },
        compare: { type: 'string' },
        scale: { type: 'string' },
        duration: { type: 'string' },
        'start-hour': { type: 'string' },
        faults: { type: 'string' },
        'busy-policy': { type: 'string' },
        seed: { type: 'string' },
        report: { type: 'string' },
        json: { type: 'boolean' },
      },
    }));
  } catch (error) {
    throw new DeploymentUsageError(error instanceof Error ? error.message : String(error));
  }
  const sources = [values['from-store'], values['from-redis'], values.workload].filter((v) => v !== undefined);
  if (sources.length !== 1)
    throw new DeploymentUsageError('give one of --from-store DIR, --from-redis URL or --workload FILE');
  if (values['key-prefix'] !== undefined && values['from-redis'] === undefined)
    throw new DeploymentUsageError('--key-prefix goes with --from-redis URL');
  const configs: string[] = [];
  if (values.compare !== undefined) {
    if (values.config !== undefined)
      throw new DeploymentUsageError('--compare takes both configurations; leave out --config');
    if (positionals.length !== 1)
      throw new DeploymentUsageError('--compare takes two files: --compare base.toml candidate.toml');
    configs.push(values.compare, positionals[0]!);
  } else {
    if (positionals.length > 0) throw new DeploymentUsageError(`unexpected arguments: ${positionals.join(' ')}`);
    if (values.config !== undefined) configs.push(values.config);
  }
  const options: DeploymentOptions = {
    seed: integer(values.seed, '--seed', 1),
    scale: scaleOption(values.scale),
    durationMs: durationOption(values.duration),
    faults: faultsOption(values.faults),
    ...(values['start-hour'] !== undefined ? { startHour: hourOption(values['start-hour']) } : {}),
    ...(values['busy-policy'] !== undefined ? { busyPolicy: values['busy-policy'] } : {}),
    ...(values.processes !== undefined ? { processes: processesOption(values.processes) } : {}),
  };
  return {
    ...(values['from-store'] !== undefined ? { fromStore: values['from-store'] } : {}),
    ...(values['from-redis'] !== undefined ? { fromRedis: values['from-redis'] } : {}),
    ...(values['key-prefix'] !== undefined ? { keyPrefix: values['key-prefix'] } : {}),
    ...(values.workload !== undefined ? { workload: values.workload } : {}),
    ...(values['save-workload'] !== undefined ? { saveWorkload: values['save-workload'] } : {}),
    ...(values.report !== undefined ? { report: values.report } : {}),
    configs,
    options,
    json: values.json === true,
  };
}

function integer(value: string | undefined, flag: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isSafeInteger(n)) throw new DeploymentUsageError(`${flag} must be an integer, not "${value}"`);
  return n;
}

/** "3": gateway processes of a simulated cluster. */
export function processesOption(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 64)
    throw new DeploymentUsageError(`--processes must be a number of processes, 1–64, not "${value}"`);
  return n;
}

function hourOption(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 23)
    throw new DeploymentUsageError(`--start-hour must be an hour 0–23, not "${value}"`);
  return n;
}

/** "3x", "3", "0.5x". */
export function scaleOption(value: string | undefined): number {
  if (value === undefined) return 1;
  const n = Number(value.replace(/x$/i, ''));
  if (!Number.isFinite(n) || n <= 0)
    throw new DeploymentUsageError(`--scale must be a positive factor such as 3x, not "${value}"`);
  return n;
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** "90s", "30m", "1h", "1500ms". */
export function durationOption(value: string | undefined): number {
  if (value === undefined) return 3_600_000;
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(value.trim());
  if (match === null || Number(match[1]) <= 0)
    throw new DeploymentUsageError(`--duration must be a length such as 90s, 30m or 1h, not "${value}"`);
  return Math.round(Number(match[1]) * UNIT_MS[match[2]!]!);
}

/** "crash:1/h,model-errors:2%". */
export function faultsOption(value: string | undefined): DeploymentFaults {
  const faults: DeploymentFaults = {};
  if (value === undefined || value.trim() === '' || value === 'none') return faults;
  for (const part of value.split(',').map((p) => p.trim())) {
    const crash = /^crash:(\d+(?:\.\d+)?)\/h$/.exec(part);
    const errors = /^model-errors:(\d+(?:\.\d+)?)%$/.exec(part);
    if (crash) faults.crashesPerHour = Number(crash[1]);
    else if (errors && Number(errors[1]) <= 100) faults.modelErrorRate = Number(errors[1]) / 100;
    else throw new DeploymentUsageError(`--faults: "${part}" is neither crash:N/h nor model-errors:P%`);
  }
  return faults;
}

/** One column per configuration; with two, a third with the candidate's change. */
export function formatDeployment(reports: LabelledReport[]): string {
  const rows: [string, (m: DeploymentMetrics) => number, 'ms' | 'n'][] = [
    ['messages', (m) => m.messages, 'n'],
    ['completed', (m) => m.completed, 'n'],
    ['failed', (m) => m.failed, 'n'],
    ['dropped (cancelled)', (m) => m.dropped, 'n'],
    ['rejected lane_full', (m) => m.rejected.lane_full, 'n'],
    ['rejected session_busy', (m) => m.rejected.session_busy, 'n'],
    ['rejected deadline_unmeetable', (m) => m.rejected.deadline_unmeetable, 'n'],
    ['steered', (m) => m.steered, 'n'],
    ['collected (merged)', (m) => m.collected, 'n'],
    ['rolled back', (m) => m.rolledBack, 'n'],
    ['lane wait p50', (m) => m.laneWaitMs.p50, 'ms'],
    ['lane wait p95', (m) => m.laneWaitMs.p95, 'ms'],
    ['admission wait p50', (m) => m.admissionWaitMs.p50, 'ms'],
    ['admission wait p95', (m) => m.admissionWaitMs.p95, 'ms'],
    ['run latency p50', (m) => m.runLatencyMs.p50, 'ms'],
    ['run latency p95', (m) => m.runLatencyMs.p95, 'ms'],
    ['run latency p99', (m) => m.runLatencyMs.p99, 'ms'],
    ['tool-claim waits', (m) => m.toolClaimWaitMs.count, 'n'],
    ['tool-claim wait p95', (m) => m.toolClaimWaitMs.p95, 'ms'],
  ];
  const cell = (v: number, unit: 'ms' | 'n') => (unit === 'ms' ? fmtMs(v) : String(v));
  const table: string[][] = [['', ...reports.map((r) => r.label), ...(reports.length === 2 ? ['change'] : [])]];
  for (const [name, get, unit] of rows) {
    const values = reports.map((r) => get(r.report.overall));
    const change = reports.length === 2 ? [diff(values[0]!, values[1]!, unit)] : [];
    table.push([name, ...values.map((v) => cell(v, unit)), ...change]);
  }
  table.push([
    'limiter utilisation',
    ...reports.map((r) => `${(r.report.utilisation.global * 100).toFixed(1)} %`),
    ...(reports.length === 2 ? [''] : []),
  ]);
  table.push([
    'invariant checks',
    ...reports.map((r) => `${r.report.invariants.checks} (${r.report.invariants.violations.length} violations)`),
    ...(reports.length === 2 ? [''] : []),
  ]);
  const widths = table[0]!.map((_, c) => Math.max(...table.map((row) => row[c]!.length)));
  const lines = table.map((row) =>
    row
      .map((v, c) => (c === 0 ? v.padEnd(widths[c]!) : v.padStart(widths[c]!)))
      .join('  ')
      .trimEnd(),
  );
  const first = reports[0]!.report;
  const cluster = first.processes > 1 ? `${first.processes} processes, ` : '';
  const header =
    `switchyard simulate — seed ${first.seed}, scale ${first.scale}×, ${fmtMs(first.durationMs)} of ` +
    `arrivals from ${first.startHour}:00 UTC, ${cluster}${first.crashes} ` +
    `crash${first.crashes === 1 ? '' : 'es'}`;
  const unknown = Object.entries(first.unknownPolicies);
  const note =
    unknown.length > 0
      ? `\nbusy policies this engine does not know, sent as queue: ${unknown.map(([p, n]) => `${p} ×${n}`).join(', ')}`
      : '';
  return `${header}\n${lines.map((l) => `  ${l}`).join('\n')}${note}\n${reports.map(formatProcesses).join('')}`;
}

/** With several processes: one line per process of each report. */
function formatProcesses({ label, report }: LabelledReport): string {
  if (report.perProcess === undefined) return '';
  const header = [
    'process',
    'crashes',
    'messages',
    'runs',
    'completed',
    'failed',
    'cancelled',
    'taken over',
    'utilisation',
    'peak',
  ];
  const rows = report.perProcess.map((p) => [
    p.process,
    String(p.crashes),
    String(p.messages),
    String(p.runs),
    String(p.completed),
    String(p.failed),
    String(p.cancelled),
    String(p.takenOver),
    `${(p.utilisation * 100).toFixed(1)} %`,
    String(p.peakRunning),
  ]);
  const table = [header, ...rows];
  const widths = header.map((_, c) => Math.max(...table.map((row) => row[c]!.length)));
  const lines = table.map((row) =>
    row.map((v, c) => (c === 0 ? v.padEnd(widths[c]!) : v.padStart(widths[c]!))).join('  '),
  );
  const title =
    `processes of ${label} (sessions taken over from a process that died; ` +
    'utilisation: its running runs over max_runs_global)';
  return `${title}\n${lines.map((l) => `  ${l}`).join('\n')}\n`;
}

function diff(base: number, candidate: number, unit: 'ms' | 'n'): string {
  const delta = candidate - base;
  if (delta === 0) return '=';
  const sign = delta > 0 ? '+' : '−';
  const abs = unit === 'ms' ? fmtMs(Math.abs(delta)) : String(Math.abs(delta));
  return base !== 0 ? `${sign}${abs} (${sign}${((Math.abs(delta) / base) * 100).toFixed(0)} %)` : `${sign}${abs}`;
}
