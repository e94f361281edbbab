/*
 * A gateway under load, killed with SIGKILL at a chosen moment, restarted on the same data
 * directory, and checked from outside through its own protocol: the harness keeps a ledger of
 * every message the gateway acknowledged (`started`, `queued`, `steered`) and, after each
 * restart, demands that every one of them is accounted for — known, and in the end terminal —
 * that every run's log is whole (seq 1..n, one terminal event, last), that no session number
 * is used twice, and that every steer answers with the run it really went into.
 *
 * Used by test/crash/gateway-crash.test.ts (a few kills) and `npm run soak` (many).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connect, type SwitchyardClient } from '../../src/client/index.js';
import { isTerminalEvent, type RunEvent } from '../../src/core/run-events.js';
import type { SubmitResult } from '../../src/core/submit-result.js';
import { readToken } from '../../src/gateway/index.js';
import { eventually } from '../support/eventually.js';

/** How long the load may take to reach the moment to kill (a loaded machine is slow). */
const LOAD_PATIENCE = { withinMs: 60_000, everyMs: 10 };

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

/** When to pull the plug. */
export type KillMoment = 'after-answer-burst' | 'while-submitting' | 'while-busy' | 'during-recovery' | 'at-saturation';
export const KILL_MOMENTS: readonly KillMoment[] = [
  'after-answer-burst',
  'while-submitting',
  'while-busy',
  'during-recovery',
  'at-saturation',
];

export interface CrashTrialReport {
  moment: KillMoment;
  acknowledged: number;
  refused: number;
}

export interface CrashReport {
  trials: CrashTrialReport[];
  acknowledged: number;
  /** Problems found; empty when every promise held. */
  violations: string[];
}

export interface ServeProcess {
  child: ChildProcess;
  url: string;
  stdout(): string;
  closed: Promise<void>;
}
type Server = ServeProcess;

/** The ledger: what the gateway said about each message it acknowledged. */
type Ledger = Map<string, SubmitResult>;

export class GatewayCrashHarness {
  private dataDir = '';
  private config = '';
  private workspaces = '';
  private readonly ledger: Ledger = new Map();
  private readonly trials: CrashTrialReport[] = [];
  private next = 0;
  private server: Server | undefined;

  /** A data dir, a config whose model answers after a short delay, small lanes and limits (so saturation happens). */
  async setUp(): Promise<void> {
    this.dataDir = await mkdtemp(join(tmpdir(), 'switchyard-crash-data-'));
    this.workspaces = await mkdtemp(join(tmpdir(), 'switchyard-crash-ws-'));
    const script = join(this.workspaces, 'script.json');
    await writeFile(script, JSON.stringify([{ text: 'thinking aloud', delayMs: 40 }]));
    this.config = join(this.workspaces, 'switchyard.toml');
    await writeFile(
      this.config,
      [
        '[execution]',
        'default_model = "steady"',
        'max_runs_global = 3',
        'wait_lane_capacity = 6',
        '[models.steady]',
        'kind = "scripted"',
        `script = ${JSON.stringify(script)}`,
        '[sandbox]',
        `workspace_root = ${JSON.stringify(join(this.workspaces, 'ws'))}`,
      ].join('\n'),
    );
  }

  async tearDown(): Promise<void> {
    this.server?.child.kill('SIGKILL');
    await this.server?.closed;
    await rm(this.dataDir, { recursive: true, force: true });
    await rm(this.workspaces, { recursive: true, force: true });
  }

  /** One trial: start, load, kill at `moment`, then start again and check every promise. */
  async trial(moment: KillMoment): Promise<string[]> {
    const before = this.ledger.size;
    let refused = 0;
    if (moment === 'during-recovery') {
      // Leave work behind, then kill the next incarnation while it is still starting up.
      const server = await this.start();
      const client = await this.client(server);
      refused += await this.burst(client, 20);
      await this.kill(server);
      // Killed somewhere in its start: loading, opening the store, recovering, or just after.
      const starting = this.spawnServer();
      await new Promise((resolve) => setTimeout(resolve, 200 + ((this.trials.length * 397) % 1500)));
      await this.kill(starting);
    } else {
      const server = await this.start();
      const client = await this.client(server);
      if (moment === 'after-answer-burst') {
        refused += await this.burst(client, 25);
      } else if (moment === 'while-submitting') {
        // Requests still in flight when the plug is pulled: only the answered ones count.
        const inFlight = Array.from({ length: 60 }, () => this.submit(client));
        await Promise.race([Promise.allSettled(inFlight), this.untilAcknowledged(before + 15)]);
      } else if (moment === 'while-busy') {
        refused += await this.burst(client, 10);
        await eventually(async () => (await client.snapshot()).running.length > 0, 'a run is running', LOAD_PATIENCE);
      } else {
        // Saturation: more than the limits and the lanes hold, so some are refused (lane_full).
        for (let round = 0; round < 3; round++) refused += await this.burst(client, 30, 2);
      }
      await this.kill(server);
    }
    this.trials.push({ moment, acknowledged: this.ledger.size - before, refused });
    return this.check();
  }

  /** After the last trial: everything acknowledged reaches its outcome. */
  async finish(): Promise<CrashReport> {
    const server = await this.start();
    const client = await this.client(server);
    const violations = await this.checkWith(client, true);
    await client.close();
    server.child.kill('SIGTERM');
    await server.closed;
    this.server = undefined;
    return { trials: this.trials, acknowledged: this.ledger.size, violations };
  }

  private async check(): Promise<string[]> {
    const server = await this.start();
    const client = await this.client(server);
    const violations = await this.checkWith(client, false);
    await client.close();
    await this.kill(server);
    return violations;
  }

  /** Every acknowledged message known (and, when `settle`, terminal with a whole log); numbering never reused; steers truthful. */
  private async checkWith(client: SwitchyardClient, settle: boolean): Promise<string[]> {
    const violations: string[] = [];
    const bySession = new Map<string, Map<number, string>>();
    for (const [runId, answer] of this.ledger) {
      const status = await client.get(runId).catch((error: unknown) => error);
      if (status instanceof Error) {
        violations.push(
          `acknowledged ${answer.outcome} message ${runId} is unknown after the restart: ${status.message}`,
        );
        continue;
      }
      if (!settle) continue;
      const result = await client.wait(runId);
      if (answer.outcome === 'steered') {
        const steer = (await client.get(runId)).steer;
        const fate = steer?.state === 'consumed' ? answer.intoRunId : steer?.followUp;
        if (!steer || result.runId !== fate)
          violations.push(
            `steer ${runId} into ${answer.intoRunId} answers with run ${result.runId} (steer ${JSON.stringify(steer)})`,
          );
        if (steer?.state === 'consumed') {
          const read = (await client.history(answer.intoRunId!)).filter(
            (e) => e.type === 'run.steered' && e.steerId === runId,
          );
          if (read.length !== 1)
            violations.push(
              `steer ${runId} is consumed, and ${answer.intoRunId} logs ${read.length} run.steered for it`,
            );
        }
        continue;
      }
      const history = await client.history(runId);
      violations.push(...wholeLog(runId, history));
      for (const event of history) {
        const seen = bySession.get(event.sessionId) ?? new Map<number, string>();
        const key = `${event.runId}#${event.seq}`;
        const other = seen.get(event.sessionSeq);
        if (other !== undefined && other !== key)
          violations.push(`session ${event.sessionId} numbers both ${other} and ${key} as ${event.sessionSeq}`);
        seen.set(event.sessionSeq, key);
        bySession.set(event.sessionId, seen);
      }
    }
    return violations;
  }

  /** A burst submitted together; resolves when every answer is in. Returns how many were refused. */
  private async burst(client: SwitchyardClient, size: number, sessions = 4): Promise<number> {
    const results = await Promise.allSettled(Array.from({ length: size }, () => this.submit(client, sessions)));
    return results.filter((r) => r.status === 'rejected').length;
  }

  private async submit(client: SwitchyardClient, sessions = 4): Promise<void> {
    const n = this.next++;
    const policies = ['steer', 'queue', 'interrupt', 'queue'] as const;
    const answer = await client.submit({
      sessionId: `s${n % sessions}`,
      input: `message ${n}`,
      busyPolicy: policies[n % policies.length]!,
    });
    this.ledger.set(answer.runId, answer);
  }

  private async untilAcknowledged(count: number): Promise<void> {
    await eventually(async () => this.ledger.size >= count, `${count} submissions acknowledged`, LOAD_PATIENCE);
  }

  private async client(server: Server): Promise<SwitchyardClient> {
    return connect(server.url, { token: (await readToken(join(this.dataDir, 'token')))! });
  }

  private async start(): Promise<Server> {
    const server = this.spawnServer();
    // The last line serve writes once it listens: where the token is (a JSON log line when stdout is not a terminal).
    const banner = /(^token\b|gateway token\b).*\n/m;
    const giveUpAt = Date.now() + 60_000;
    for (;;) {
      if (banner.test(server.stdout())) break;
      if (server.child.exitCode !== null) throw new Error(`serve exited:\n${server.stdout()}`);
      if (Date.now() > giveUpAt) throw new Error(`serve did not announce its token within 60 s:\n${server.stdout()}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const url = /listening on (ws:\/\/[^\s"]+)/.exec(server.stdout())?.[1];
    if (!url) throw new Error(`serve did not say where it listens:\n${server.stdout()}`);
    server.url = url;
    this.server = server;
    return server;
  }

  private spawnServer(): Server {
    return spawnServe(this.dataDir, this.config);
  }

  private async kill(server: Server): Promise<void> {
    server.child.kill('SIGKILL');
    await server.closed;
    if (this.server === server) this.server = undefined;
  }
}

function wholeLog(runId: string, history: RunEvent[]): string[] {
  const problems: string[] = [];
  const seqs = history.map((e) => e.seq);
  if (seqs.some((seq, i) => seq !== i + 1)) problems.push(`run ${runId}: seq ${seqs.join(',')} has a gap`);
  const terminal = history.filter(isTerminalEvent);
  if (terminal.length !== 1 || !isTerminalEvent(history.at(-1) ?? { type: '' }))
    problems.push(`run ${runId}: ${terminal.length} terminal events, last ${history.at(-1)?.type}`);
  return problems;
}

/** `switchyard serve` of the sources on a free port, its stdout kept whole (the gateway's url is read from it). */
export function spawnServe(dataDir: string, config: string): ServeProcess {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/cli.ts', 'serve', '--port', '0', '--data-dir', dataDir, '--config', config],
    {
      cwd: repoRoot,
      env: { ...process.env, SWITCHYARD_TOKEN: '' },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let out = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  return { child, url: '', stdout: () => out, closed };
}
