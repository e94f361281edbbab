/*
 * The file store's write-ahead journal: every change is appended here as one JSON line before
 * anything else is written, and a change counts as stored once its line is on disk. Changes
 * asked for together share one append (group commit) — and, with fsync, one flush. The store's
 * own files are then written in the background; when they hold everything a journal segment
 * holds, the segment is deleted. After a crash, the segments left are replayed over the files.
 *
 *   journal/<n>.jsonl   segments, oldest first; a torn last line (a crash mid-append) was never
 *                       acknowledged and is ignored
 */
import { writeSync } from 'node:fs';
import { open, readdir, readFile, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { errorCode } from './read-json-file.js';
import { makePrivateDir, PRIVATE_FILE_MODE, syncDirectory } from './private-file.js';

export interface JournalOptions {
  /** fsync each append before it counts as done (survives a power loss). */
  fsync: boolean;
  /** A segment this large (bytes) is closed and a new one started. Default 8 MiB. */
  segmentBytes?: number;
  /**
   * Resolves once the store's files hold every change asked for before the call: then a
   * closed segment can go. Contract: must not reject.
   */
  checkpoint: () => Promise<void>;
}

interface Batch {
  lines: string[];
  resolve: () => void;
  reject: (error: unknown) => void;
  done: Promise<void>;
}

const DEFAULT_SEGMENT_BYTES = 8 * 1024 * 1024;

export class Journal {
  private handle: FileHandle | undefined;
  private segment = 0;
  private segmentBytes = 0;
  private pending: Batch | undefined;
  private writing: Promise<void> = Promise.resolve();
  private last: Promise<void> = Promise.resolve();
  private failed: unknown;
  /** Appends written so far, each holding every change of its group (for tests and benchmarks). */
  writes = 0;

  private constructor(
    private readonly dir: string,
    private readonly options: JournalOptions,
  ) {}

  /** The lines of the segments a previous process left, oldest first, then a new empty journal. */
  static async open(dir: string, options: JournalOptions): Promise<{ journal: Journal; leftOver: unknown[]; segments: string[] }> {
    await makePrivateDir(dir, options.fsync);
    const segments = (await readdir(dir)).filter((name) => /^\d+\.jsonl$/.test(name)).sort((a, b) => Number.parseInt(a) - Number.parseInt(b));
    const leftOver: unknown[] = [];
    for (const name of segments) leftOver.push(...parseLines(await readFile(join(dir, name), 'utf8')));
    const journal = new Journal(dir, options);
    journal.segment = segments.length === 0 ? 0 : Number.parseInt(segments.at(-1)!);
    return { journal, leftOver, segments: segments.map((name) => join(dir, name)) };
  }

  /** Appends one change; resolves once its line is on disk (with fsync: flushed). */
  append(change: unknown): Promise<void> {
    if (this.failed !== undefined) return Promise.reject(this.failed);
    const line = JSON.stringify(change);
    if (!this.pending) {
      let resolve!: () => void;
      let reject!: (error: unknown) => void;
      const done = new Promise<void>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      done.catch(() => {});
      this.pending = { lines: [], resolve, reject, done };
      const batch = this.pending;
      setImmediate(() => this.schedule(batch));
      this.last = done;
    }
    this.pending.lines.push(line);
    return this.pending.done;
  }

  /** Resolves once every change appended before the call is on disk. */
  durable(): Promise<void> {
    return this.last;
  }

  /** Deletes the segments a previous process left, once the store's files hold their changes. */
  async discard(segments: string[]): Promise<void> {
    for (const path of segments) await unlink(path).catch((error: unknown) => (errorCode(error) === 'ENOENT' ? undefined : Promise.reject(error)));
    if (segments.length > 0 && this.options.fsync) await syncDirectory(this.dir);
  }

  /**
   * Closes the journal after a clean shutdown: the store's files hold every change, so every
   * segment goes and the next start has nothing to replay.
   */
  async close(): Promise<void> {
    await this.last.catch(() => {});
    await this.writing.catch(() => {});
    await this.handle?.close();
    this.handle = undefined;
    if (this.failed !== undefined) return;
    const segments = (await readdir(this.dir)).filter((name) => /^\d+\.jsonl$/.test(name));
    await this.discard(segments.map((name) => join(this.dir, name)));
  }

  private schedule(batch: Batch): void {
    if (this.pending === batch) this.pending = undefined;
    this.writing = this.writing.then(() => this.write(batch));
  }

  private async write(batch: Batch): Promise<void> {
    try {
      const text = `${batch.lines.join('\n')}\n`;
      const handle = await this.segmentFor(Buffer.byteLength(text));
      if (this.options.fsync) {
        await handle.write(text);
        await handle.datasync();
      } else {
        // One small append to the page cache: done on this thread, so it never queues behind
        // the file writes that keep libuv's thread pool busy.
        writeSync(handle.fd, text);
      }
      this.segmentBytes += Buffer.byteLength(text);
      this.writes += 1;
      batch.resolve();
    } catch (error) {
      // A journal that cannot be written loses what comes after: refuse everything from now on.
      this.failed = error;
      batch.reject(error);
    }
  }

  /** The open segment, or a new one when this append would grow it past its size (the old one goes once checkpointed). */
  private async segmentFor(bytes: number): Promise<FileHandle> {
    const limit = this.options.segmentBytes ?? DEFAULT_SEGMENT_BYTES;
    if (this.handle && this.segmentBytes + bytes <= limit) return this.handle;
    const old = this.handle;
    const oldPath = join(this.dir, `${this.segment}.jsonl`);
    this.segment += 1;
    this.handle = await open(join(this.dir, `${this.segment}.jsonl`), 'a', PRIVATE_FILE_MODE);
    this.segmentBytes = 0;
    if (this.options.fsync) await syncDirectory(this.dir);
    if (old) {
      await old.close();
      // Every change of the old segment was asked for before this point: once the files hold them, it can go.
      void this.options.checkpoint().then(() => this.discard([oldPath])).catch(() => {});
    }
    return this.handle;
  }
}

/** The changes of a segment; a line that does not parse can only be the last, torn by a crash. */
function parseLines(text: string): unknown[] {
  const changes: unknown[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    try {
      changes.push(JSON.parse(line));
    } catch {
      break;
    }
  }
  return changes;
}
