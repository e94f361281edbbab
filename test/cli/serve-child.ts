/*
 * A `switchyard serve` child process as an operator sees it: its JSON log lines (stdout is not
 * a terminal), its pid, and its exit. Every child is killed after the test if it still runs.
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { afterEach } from 'vitest';
import { connect, type SwitchyardClient } from '../../src/client/index.js';
import { readToken } from '../../src/gateway/index.js';
import { eventually } from '../support/eventually.js';

/** serve's log: one JSON object per line when stdout is not a terminal. */
export interface LogLine {
  level: number | string;
  msg: string;
  pid?: number;
  [field: string]: unknown;
}

export interface ServeChild {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** The complete JSON lines so far (npm's own lines and a line still being written are left out). */
  logLines(): LogLine[];
  /** Resolves with the first log line matching, or rejects once the child has exited without one. */
  waitForLog(matches: (line: LogLine) => boolean, what: string): Promise<LogLine>;
  /** Exit code (null when killed by a signal) once stdout and stderr are drained. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Each child, and whether it leads its own process group (npm and the server it started). */
const running = new Map<ChildProcess, boolean>();
const clients: SwitchyardClient[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) await client.close().catch(() => {});
  for (const [child, group] of running) {
    // A group outlives its leader when the leader left a server behind; a lone child is killed only while it runs.
    if (!group && (child.exitCode !== null || child.signalCode !== null)) continue;
    try {
      process.kill(group ? -child.pid! : child.pid!, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  running.clear();
});

/** How `eventually` waits for a serve child: gently, and long (children on a loaded machine take seconds). */
export const CHILD_PATIENCE = { withinMs: 120_000, everyMs: 50 };

export function spawnServe(command: string, args: string[], options: SpawnOptions): ServeChild {
  const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
  running.set(child, options.detached === true);
  let out = '';
  let err = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
  let done = false;
  // 'close', not 'exit': the output is read whole only once it is drained.
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('close', (code, signal) => {
      done = true;
      resolve({ code, signal });
    }),
  );
  const logLines = () =>
    out
      .split('\n')
      .slice(0, -1)
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as LogLine);
  const waitForLog = async (matches: (line: LogLine) => boolean, what: string) => {
    let found: LogLine | undefined;
    await eventually(
      () => {
        found = logLines().find(matches);
        if (!found && done) throw new Error(`exited before logging ${what}:\n${out}\n${err}`);
        return found !== undefined;
      },
      what,
      CHILD_PATIENCE,
    );
    return found!;
  };
  return { child, stdout: () => out, stderr: () => err, logLines, waitForLog, exited };
}

/** The address serve listens on, once its start-up banner is out. */
export async function servedUrl(server: ServeChild): Promise<string> {
  await server.waitForLog((line) => /gateway token(?: is|; it is) in /.test(line.msg), 'the start-up banner');
  return server.logLines().find((line) => line.msg.startsWith('listening on'))!['url'] as string;
}

export async function clientOf(url: string, tokenFile: string): Promise<SwitchyardClient> {
  const client = await connect(url, { token: (await readToken(tokenFile))! });
  clients.push(client);
  return client;
}
