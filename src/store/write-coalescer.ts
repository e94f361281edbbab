/*
 * One writer per file, coalescing: every write asked for while a file's write is scheduled
 * or running is folded into the next one, so a burst of appends costs one write per file.
 * Writes of one file never overlap (each renames a single temp file into place); writes of different files run in parallel. The content is taken when the write
 * starts, not when it is asked for. Each file is a lowdb document (json-document.ts): a write
 * sets its data and calls its write().
 */
import type { Low } from 'lowdb';
import { dirname } from 'node:path';
import { CheckpointThread } from './checkpoint-thread.js';
import { indentedJson, jsonDocument } from './json-document.js';
import { makePrivateDir, PrivateTextFile } from './private-file.js';
import { StoreError } from './store-error.js';

export interface FileSnapshot {
  /** The document. */
  data: unknown;
  /** Its text, if not indentedJson (a log segment joins the texts it keeps of its items). */
  format?: (data: unknown) => string;
  /** The write waits for this first (what the file refers to must be on disk before it). */
  ready?: Promise<unknown>;
  /** Called once this content is on disk. */
  onWritten?: () => void;
}

interface Deferred {
  promise: Promise<void>;
  resolve(): void;
  reject(error: unknown): void;
}

interface FileState {
  path: string;
  document: Low<unknown>;
  format: (data: unknown) => string;
  snapshot: () => FileSnapshot;
  /** Callers waiting for the write that has not started yet. */
  next: Deferred | undefined;
  running: Promise<void> | undefined;
  failed: unknown;
}

const KNOWN_DIRS_LIMIT = 4096;

export class WriteCoalescer {
  /**
   * @param sync fsync each file and its directory before a write counts as done (power-loss durability).
   * @param delayMs how long a write waits before it starts, so more changes fold into it (0: the next
   *   macrotask). Worth it when something else (a journal) already made the changes durable.
   */
  constructor(
    private readonly sync = false,
    private readonly delayMs = 0,
  ) {
    this.thread = sync ? undefined : new CheckpointThread();
  }

  /** Files whose write waits for the delay timer. */
  private readonly delayed = new Set<FileState>();
  private timer: NodeJS.Timeout | undefined;
  /** Flushes in progress: while one waits, no write waits for the delay. */
  private hurrying = 0;

  private readonly files = new Map<string, FileState>();
  /** Without fsync, files are written on a worker thread (checkpoint-thread.ts), off the event loop. */
  private readonly thread: CheckpointThread | undefined;
  private readonly knownDirs = new Set<string>();
  /** Files renamed into place so far (for tests and benchmarks). */
  fileWrites = 0;

  /**
   * Asks for `path` to be rewritten with what `snapshot` returns when the write starts (the
   * latest snapshot function wins). Resolves once that content is renamed into place.
   */
  write(path: string, snapshot: () => FileSnapshot): Promise<void> {
    let state = this.files.get(path);
    if (!state) {
      state = {
        path,
        document: undefined as unknown as Low<unknown>,
        format: indentedJson,
        snapshot,
        next: undefined,
        running: undefined,
        failed: undefined,
      };
      state.document = this.documentOf(path, state);
      this.files.set(path, state);
    }
    state.snapshot = snapshot;
    if (!state.next) {
      state.next = deferred();
      if (!state.running) this.schedule(path, state);
    }
    return state.next.promise;
  }

  /** Stops the worker thread once every write is done (the store closes). */
  async close(): Promise<void> {
    await this.thread?.close();
  }

  /** Whether `path` has a write scheduled, running, or failed and not yet redone. */
  has(path: string): boolean {
    return this.files.has(path);
  }

  /** Why a file write failed, while one has failed and not yet been redone. */
  get failure(): unknown {
    for (const state of this.files.values()) if (state.failed !== undefined) return state.failed;
    return undefined;
  }

  get pendingFiles(): number {
    return this.files.size;
  }

  /** Runs `work` (which waits for writes) with every write, scheduled or asked for meanwhile, started at once. */
  async hurry<T>(work: () => Promise<T>): Promise<T> {
    this.hurrying += 1;
    try {
      this.startDelayed();
      return await work();
    } finally {
      this.hurrying -= 1;
    }
  }

  /** Waits for every write asked for so far (and those asked for meanwhile); redoes failed ones once. */
  async flush(): Promise<void> {
    await this.drain();
    const failed = [...this.files].filter(([, state]) => state.failed !== undefined);
    if (failed.length === 0) return;
    await Promise.allSettled(failed.map(([path, state]) => this.write(path, state.snapshot)));
    await this.drain();
    const still = [...this.files].find(([, state]) => state.failed !== undefined);
    if (still) {
      const [path, state] = still;
      throw new StoreError(
        'write_failed',
        `could not write ${path}: ${String(state.failed)}; check free disk space and permissions, then flush() again`,
        {
          path,
          cause: state.failed,
        },
      );
    }
  }

  private async drain(): Promise<void> {
    for (;;) {
      this.startDelayed();
      const busy = [...this.files.values()].filter((state) => state.next || state.running);
      if (busy.length === 0) return;
      // A running write first: a write asked for meanwhile is scheduled when it ends (with the
      // delay), and the next round of this loop starts it at once instead of waiting the delay.
      await Promise.allSettled(busy.map((state) => state.running ?? state.next?.promise));
    }
  }

  private schedule(path: string, state: FileState): void {
    if (this.delayMs === 0 || this.hurrying > 0) {
      setImmediate(() => this.start(path, state));
      return;
    }
    this.delayed.add(state);
    this.timer ??= setTimeout(() => this.startDelayed(), this.delayMs);
  }

  private startDelayed(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    for (const state of [...this.delayed]) this.start(state.path, state);
    this.delayed.clear();
  }

  private start(path: string, state: FileState): void {
    const waiters = state.next;
    if (!waiters || state.running) return;
    state.next = undefined;
    state.running = this.perform(path, state, waiters);
  }

  private async perform(path: string, state: FileState, waiters: Deferred): Promise<void> {
    try {
      const snapshot = state.snapshot();
      if (snapshot.ready) await snapshot.ready;
      state.format = snapshot.format ?? indentedJson;
      state.document.data = snapshot.data;
      await state.document.write();
      this.fileWrites += 1;
      state.failed = undefined;
      snapshot.onWritten?.();
      waiters.resolve();
    } catch (error) {
      state.failed = error;
      waiters.reject(error);
    } finally {
      state.running = undefined;
      if (state.next) this.schedule(path, state);
      else if (state.failed === undefined) this.files.delete(path);
    }
  }

  /** The file's lowdb document: written on the checkpoint thread, or here through a private temp file. */
  private documentOf(path: string, state: FileState): Low<unknown> {
    const thread = this.thread;
    const file = new PrivateTextFile(path, this.sync);
    const document = jsonDocument<unknown>(path, {
      format: (data) => state.format(data),
      writeText: thread
        ? (text) => thread.write(path, text)
        : async (text) => {
            await this.ensureDir(dirname(path));
            await file.write(text);
          },
    });
    return document as Low<unknown>;
  }

  private async ensureDir(dir: string): Promise<void> {
    if (this.knownDirs.has(dir)) return;
    await makePrivateDir(dir, this.sync);
    if (this.knownDirs.size >= KNOWN_DIRS_LIMIT) this.knownDirs.clear();
    this.knownDirs.add(dir);
  }
}

function deferred(): Deferred {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // A failure is also kept for flush(), so a caller that drops this promise crashes nothing.
  promise.catch(() => {});
  return { promise, resolve, reject };
}
