/*
 * What the ACP suites share: `switchyard acp` spawned as a child process over pipes, with the
 * SDK's client side on this end. Every stdout line is kept as it arrived, before the client
 * reads it: the session updates are taken from there, so every update that preceded an answer
 * on the wire is recorded once the client resolves that answer (the client's own dispatch of
 * notifications may lag a few ticks behind its answers), and stdout is checked for protocol
 * frames only once the child has exited. The client answers permission requests as the test
 * says. Tests wait on protocol messages (an answer, an update that matches), never on time.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { StringDecoder } from 'node:string_decoder';
import { fileURLToPath } from 'node:url';
import {
  client,
  methods,
  ndJsonStream,
  PROTOCOL_VERSION,
  type ClientConnection,
  type RequestPermissionRequest,
  type RequestPermissionResponse,
  type SessionNotification,
  type SessionUpdate,
} from '@agentclientprotocol/sdk';
import { afterAll } from 'vitest';

/** Each spawn starts tsx; on a loaded machine one start alone can take seconds. */
export const SPAWN_TIMEOUT = 180_000;
const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const children = new Set<ChildProcess>();

// After the file's tests, not each: a suite may keep one child across its tests, as an editor does.
afterAll(() => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  children.clear();
});

/** `signal` aborts when the agent withdraws its request ($/cancel_request). */
export type PermissionAnswer = (
  request: RequestPermissionRequest,
  signal: AbortSignal,
) => RequestPermissionResponse | Promise<RequestPermissionResponse>;

export interface AcpChild {
  connection: ClientConnection;
  /** Every session/update, in arrival order (a fresh array from the frames so far). */
  readonly updates: SessionNotification[];
  /** Every session/request_permission, in arrival order. */
  permissionRequests: RequestPermissionRequest[];
  /** Every stdout line, as it arrived. */
  frames: string[];
  /** How the next permission requests are answered (default: reject once). */
  answerPermissions(answer: PermissionAnswer): void;
  /** Resolves with the first update (from `from` on) that matches. */
  nextUpdate(match: (update: SessionUpdate, sessionId: string) => boolean, from?: number): Promise<SessionUpdate>;
  /** Resolves with the first frame (a parsed stdout line) that matches. */
  nextFrame(match: (frame: Record<string, unknown>) => boolean): Promise<Record<string, unknown>>;
  /** Writes a raw line to the child's stdin, as it is. */
  writeRaw(line: string): void;
  /** Sends initialize and resolves with the answer. */
  initialize(): ReturnType<ClientConnection['agent']['request']>;
  /** Closes stdin and resolves with the exit code and stderr once the child has exited. */
  stop(): Promise<{ code: number | null; stderr: string }>;
  stderr(): string;
}

export function spawnAcp(args: string[], env: Record<string, string> = {}): AcpChild {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'acp', ...args], {
    cwd: repoRoot,
    env: { ...process.env, SWITCHYARD_TOKEN: '', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  children.add(child);
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

  const frames: string[] = [];
  const updates: SessionNotification[] = [];
  const frameWatchers = new Set<() => void>();
  // A chunk may end inside a multi-byte character; the decoder keeps it for the next one.
  const decoder = new StringDecoder('utf8');
  let partial = '';
  const readable = new ReadableStream<Uint8Array>({
    start(controller) {
      child.stdout!.on('data', (chunk: Buffer) => {
        partial += decoder.write(chunk);
        let newline = partial.indexOf('\n');
        while (newline >= 0) {
          const line = partial.slice(0, newline);
          frames.push(line);
          const frame = parseFrame(line);
          if (frame?.['method'] === methods.client.session.update) updates.push(frame['params'] as SessionNotification);
          partial = partial.slice(newline + 1);
          newline = partial.indexOf('\n');
        }
        for (const watcher of [...frameWatchers]) watcher();
        controller.enqueue(new Uint8Array(chunk));
      });
      child.stdout!.once('end', () => controller.close());
    },
  });
  const writable = new WritableStream<Uint8Array>({
    write: (chunk) =>
      new Promise<void>((resolve, reject) => {
        if (!child.stdin!.writable) return reject(new Error('the child has closed its stdin'));
        child.stdin!.write(chunk, (error) => (error ? reject(error) : resolve()));
      }),
  });

  const permissionRequests: RequestPermissionRequest[] = [];
  let answer: PermissionAnswer = () => ({ outcome: { outcome: 'selected', optionId: 'reject_once' } });
  const app = client({ name: 'switchyard-acp-test' })
    // Recorded from the frames above.
    .onNotification(methods.client.session.update, () => {})
    .onRequest(methods.client.session.requestPermission, ({ params, signal }) => {
      permissionRequests.push(params);
      return answer(params, signal);
    });
  const connection = app.connect(ndJsonStream(writable, readable));

  const nextUpdate = (match: (update: SessionUpdate, sessionId: string) => boolean, from = 0) =>
    new Promise<SessionUpdate>((resolve, reject) => {
      const check = () => {
        const found = updates.slice(from).find((n) => match(n.update, n.sessionId));
        if (found) {
          frameWatchers.delete(check);
          resolve(found.update);
        }
      };
      frameWatchers.add(check);
      check();
      void exited.then(() => {
        if (frameWatchers.delete(check))
          reject(new Error(`the child exited before the update arrived; stderr:\n${stderr}`));
      });
    });

  const nextFrame = (match: (frame: Record<string, unknown>) => boolean) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const check = () => {
        for (const line of frames) {
          const frame = parseFrame(line);
          if (frame && match(frame)) {
            frameWatchers.delete(check);
            resolve(frame);
            return;
          }
        }
      };
      frameWatchers.add(check);
      check();
      void exited.then(() => {
        if (frameWatchers.delete(check))
          reject(new Error(`the child exited before the frame arrived; stderr:\n${stderr}`));
      });
    });

  return {
    connection,
    updates,
    permissionRequests,
    frames,
    answerPermissions: (next) => (answer = next),
    nextUpdate,
    nextFrame,
    writeRaw: (line) => void child.stdin!.write(`${line}\n`),
    initialize: () =>
      connection.agent.request(methods.agent.initialize, {
        protocolVersion: PROTOCOL_VERSION,
        clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true },
        clientInfo: { name: 'switchyard-acp-test', version: '1.0.0' },
      }),
    async stop() {
      child.stdin!.end();
      const code = await exited;
      connection.close();
      return { code, stderr };
    },
    stderr: () => stderr,
  };
}

export function parseFrame(line: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(line);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** The choice of one option, as a client answers a permission request. */
export function choose(optionId: 'allow_once' | 'allow_always' | 'reject_once' | 'reject_always'): PermissionAnswer {
  return () => ({ outcome: { outcome: 'selected', optionId } });
}
