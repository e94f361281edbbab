/*
 * The main thread's side of checkpoint-worker.js: file writes asked for in one macrotask go to
 * the worker as one message and are written there in order; each caller's promise settles
 * when the worker reports its batch. The worker keeps the process alive only while it has
 * writes in flight, and is started again if it dies.
 */
import { Worker } from 'node:worker_threads';

interface Waiter {
  resolve(): void;
  reject(error: unknown): void;
}

interface Reply {
  batch: number;
  failures: { index: number; message: string; code?: string }[];
}

const WORKER_URL = new URL('./checkpoint-worker.js', import.meta.url);

export class CheckpointThread {
  private worker: Worker | undefined;
  private nextBatch = 0;
  private queued: { path: string; text: string }[] = [];
  private queuedWaiters: Waiter[] = [];
  private readonly inFlight = new Map<number, Waiter[]>();

  /** Replaces `path` with `text` on the worker; resolves once it is renamed into place. */
  write(path: string, text: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (this.queued.length === 0) queueMicrotask(() => this.post());
      this.queued.push({ path, text });
      this.queuedWaiters.push({ resolve, reject });
    });
  }

  /** Stops the worker (after the store's last write); a later write starts it again. */
  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    await worker?.terminate();
  }

  private post(): void {
    const files = this.queued;
    const waiters = this.queuedWaiters;
    this.queued = [];
    this.queuedWaiters = [];
    if (files.length === 0) return;
    const batch = this.nextBatch++;
    this.inFlight.set(batch, waiters);
    const worker = this.started();
    worker.ref();
    worker.postMessage({ batch, files });
  }

  private started(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(WORKER_URL);
    worker.on('message', (reply: Reply) => this.settle(worker, reply));
    worker.on('error', (error) => this.lost(worker, error));
    worker.on('exit', (code) => this.lost(worker, new Error(`the checkpoint writer stopped (exit code ${code})`)));
    this.worker = worker;
    return worker;
  }

  private settle(worker: Worker, { batch, failures }: Reply): void {
    const waiters = this.inFlight.get(batch);
    this.inFlight.delete(batch);
    if (!waiters) return;
    const failed = new Map(failures.map((failure) => [failure.index, failure]));
    waiters.forEach((waiter, index) => {
      const failure = failed.get(index);
      if (failure) waiter.reject(Object.assign(new Error(failure.message), { code: failure.code }));
      else waiter.resolve();
    });
    if (this.inFlight.size === 0) worker.unref();
  }

  /** The worker died (or was stopped): what it had not reported failed; the next write starts a new one. */
  private lost(worker: Worker, error: unknown): void {
    if (this.worker === worker) this.worker = undefined;
    for (const waiters of this.inFlight.values()) for (const waiter of waiters) waiter.reject(error);
    this.inFlight.clear();
  }
}
