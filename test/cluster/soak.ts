/*
 * `npm run soak:cluster [-- --rounds N]`: the process tests' scenario, longer. Three serve
 * processes on one redis-server; each round puts load on twenty sessions while one process is
 * killed (SIGKILL), another paused past its lease (SIGSTOP, then SIGCONT), and every third
 * round Redis itself restarts; the killed process is replaced by a new one. After each round
 * every accepted message must be accounted for and the stored logs must hold no gap, no
 * overlapping runs in a session, and never more runs than max_runs_global. Exits 1 on the
 * first round that breaks a promise.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { accountFor, submitLoad } from './cluster-load.js';
import { redisUnavailable, startRedisServer } from './redis-server.js';
import { startServeProcess, stopServeProcess, type ClusterLayout, type ServeProcess } from './serve-process.js';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '5' } } });
const ROUNDS = Number(values.rounds);
const MAX_RUNS_GLOBAL = 4;

const missing = redisUnavailable();
if (missing) {
  console.error(`soak:cluster needs redis-server: ${missing}`);
  process.exit(1);
}

const redis = await startRedisServer({ appendonly: true });
const root = await mkdtemp(join(tmpdir(), 'switchyard-soak-'));
const turn = { toolCalls: [{ name: 'bash', args: { command: 'echo ran >> executions.log' } }], delayMs: 100 };
await writeFile(join(root, 'turns.json'), JSON.stringify([turn, turn, { text: 'done', delayMs: 100 }]));
const layout: ClusterLayout = {
  root,
  redisUrl: redis.url,
  keyPrefix: 'soak:',
  token: randomBytes(32).toString('base64url'),
  leaseSeconds: 2,
  extraToml: [
    '[execution]',
    `max_runs_global = ${MAX_RUNS_GLOBAL}`,
    'max_runs_per_agent = 4',
    'wait_lane_capacity = 64',
    '[approval]',
    'tier = "full"',
    '[sandbox]',
    'backend = "none"',
    'allow_unsandboxed = true',
    `workspace_root = "${join(root, 'workspaces')}"`,
    '[models.scripted]',
    'kind = "scripted"',
    `script = "${join(root, 'turns.json')}"`,
  ].join('\n'),
};

const processes: ServeProcess[] = await Promise.all(['a1', 'b1', 'c1'].map((id) => startServeProcess(layout, id)));
const live = () => processes.filter((p) => p.child.exitCode === null && p.child.signalCode === null);
let failed = false;
try {
  for (let round = 1; round <= ROUNDS && !failed; round++) {
    const victim = processes[round % processes.length]!;
    const paused = processes[(round + 1) % processes.length]!;
    let disturbed = false;
    const started = Date.now();
    const load = await submitLoad({
      targets: () => live().filter((p) => p !== paused),
      sessions: Array.from({ length: 20 }, (_, i) => `round${round}-s${i}`),
      messagesPerSession: 10,
      seed: round,
      afterAccepted: async (count) => {
        if (count !== 60 || disturbed) return;
        disturbed = true;
        victim.child.kill('SIGKILL');
        paused.child.kill('SIGSTOP');
        setTimeout(() => paused.child.kill('SIGCONT'), 3 * layout.leaseSeconds * 1000);
        if (round % 3 === 0) {
          await redis.stop('graceful');
          await redis.start();
        }
      },
    });
    await victim.exited;
    const survivor = live().find((p) => p !== paused) ?? live()[0]!;
    const account = await accountFor(load.accepted, survivor, layout.redisUrl, layout.keyPrefix, 120_000);
    const broken =
      account.accounted !== account.accepted ||
      account.overlaps.length > 0 ||
      account.gaps.length > 0 ||
      account.mostRunning > MAX_RUNS_GLOBAL;
    console.log(
      `round ${round}: ${account.accepted} accepted, ${account.accounted} accounted, ${load.refused.length} refused, ${load.unanswered} unanswered; ` +
        `${account.runs} runs (${account.interrupted} interrupted) by node ${JSON.stringify(account.byNode)}; overlaps ${account.overlaps.length}; ` +
        `gaps ${account.gaps.length}; most running ${account.mostRunning}/${MAX_RUNS_GLOBAL}; ` +
        `${((Date.now() - started) / 1000).toFixed(1)} s${broken ? '  BROKEN' : ''}`,
    );
    if (broken) {
      console.log([...account.overlaps, ...account.gaps].slice(0, 20).join('\n'));
      failed = true;
    }
    const replacement = await startServeProcess(layout, `${victim.nodeId.slice(0, 1)}${round + 1}`);
    processes.splice(processes.indexOf(victim), 1, replacement);
  }
} finally {
  await Promise.all(processes.map(stopServeProcess));
  await redis.close();
  await rm(root, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
