/*
 * The file store's write-ahead journal: every change is appended here as one JSON line before
 * anything else is written, and a change counts as stored once its line is on disk. Changes
 * asked for together share one append (group commit) — and, with fsync, one flush. The store's
 * own files are then written in the background; when they hold everything a journal segment
 * holds, the segment is deleted. After a crash, the segments left are replayed over the files.
 *
 *   journal/<n>.jsonl   segments, oldest first; a torn last line (a crash mid-append) was never
 *                       acknowledged and is ignored
 *
 * An append counts only once every byte of its batch is written (a write to a nearly full disk
 * may write part of it): a batch that cannot be written whole is cut off again (the file is
 * truncated back to where it began) and refused, and the next batch may succeed once there is
 * room. Every batch ends with a newline, so bytes after a segment's last newline were never
 * acknowledged (a torn tail); a whole line that does not parse is damage from outside: it is
 * skipped, reported, and the lines after it are still read.
 */
import { ftruncateSync, writeSync } from 'node:fs';
import { open, readdir, readFile, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { errorCode } from './read-json-file.js';
import { makePrivateDir, PRIVATE_FILE_MODE, syncDirectory } from './private-file.js';

export interface JournalOptions {
  /** fsync each append before it counts as done (survives a power loss). */
  fsync: boolean;
  /**
   * A segment this large (bytes) is closed and a new one started.
   * @default 8388608 (8 MiB)
   */
  segmentBytes?: number;
  /**
   * Resolves once the store's files hold every change asked for before the call: then a
   * closed segment can go. Rejects when they could not be written: then the segment stays.
   */
  checkpoint: () => Promise<void>;
  /**
   * The write(2) the journal appends with: it may write fewer bytes than asked (returns how
   * many). Tests pass one that writes short or fails.
   * @default fs.writeSync
   */
  write?: (fd: number, buffer: Buffer, offset: number, length: number) => number;
}

/** A whole line of a segment that does not parse: skipped at open, every line after it is still read. */
export interface DamagedLine {
  segment: string;
  /** 1-based line number in its segment. */
  line: number;
  reason: string;
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
  /** The error of the last batch, until a later one is written. */
  private failed: unknown;
  /** A failed batch could not be cut off again: the next append starts a new segment. */
  private torn = false;
  /** Appends written so far, each holding every change of its group (for tests and benchmarks). */
  writes = 0;

  private constructor(
    private readonly dir: string,
    private readonly options: JournalOptions,
  ) {}

  /**
   * The lines of the segments a previous process left, oldest first, then a new empty journal
   * (whose first append starts a new segment). `damaged` lists the whole lines that did not parse.
   */
  static async open(
    dir: string,
    options: JournalOptions,
  ): Promise<{ journal: Journal; leftOver: unknown[]; segments: string[]; damaged: DamagedLine[] }> {
    await makePrivateDir(dir, options.fsync);
    const segments = (await readdir(dir))
      .filter((name) => /^\d+\.jsonl$/.test(name))
      .sort((a, b) => Number.parseInt(a) - Number.parseInt(b));
    const leftOver: unknown[] = [];
    const damaged: DamagedLine[] = [];
    for (const name of segments) {
      const path = join(dir, name);
      const parsed = parseSegment(await readFile(path, 'utf8'));
      leftOver.push(...parsed.changes);
      damaged.push(...parsed.damaged.map((d) => ({ segment: path, ...d })));
    }
    const journal = new Journal(dir, options);
    journal.segment = segments.length === 0 ? 0 : Number.parseInt(segments.at(-1)!);
    return { journal, leftOver, segments: segments.map((name) => join(dir, name)), damaged };
  }

  /** Appends one change; resolves once its line is on disk (with fsync: flushed), rejects if its batch could not be written whole. */
  append(change: unknown): Promise<void> {
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

  /** Resolves once every change appended before the call is on disk; rejects if the last batch failed. */
  durable(): Promise<void> {
    return this.last;
  }

  /** Why the last batch failed, while no later one was written (undefined: the journal writes). */
  get failure(): unknown {
    return this.failed;
  }

  /** The disk has room again (a probe write succeeded): durable() stops answering with the old failure. */
  recovered(): void {
    if (this.failed === undefined || this.pending) return;
    this.failed = undefined;
    this.last = this.writing;
  }

  /** Deletes the segments a previous process left, once the store's files hold their changes. */
  async discard(segments: string[]): Promise<void> {
    for (const path of segments)
      await unlink(path).catch((error: unknown) => (errorCode(error) === 'ENOENT' ? undefined : Promise.reject(error)));
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
    const text = Buffer.from(`${batch.lines.join('\n')}\n`);
    let handle: FileHandle | undefined;
    try {
      handle = await this.segmentFor(text.length);
      // One small append to the page cache: done on this thread, so it never queues behind the
      // file writes that keep libuv's thread pool busy.
      writeFully(this.options.write ?? writeSync, handle.fd, text);
      if (this.options.fsync) await handle.datasync();
      this.segmentBytes += text.length;
      this.writes += 1;
      this.failed = undefined;
      batch.resolve();
    } catch (error) {
      // Cut the batch off again, so the next one starts where this one began, on a fresh line.
      if (handle) this.cutBack(handle);
      this.failed = error;
      batch.reject(error);
    }
  }

  private cutBack(handle: FileHandle): void {
    try {
      ftruncateSync(handle.fd, this.segmentBytes);
    } catch {
      // The part written stays (a line that does not parse, never acknowledged): the next batch goes to a new segment.
      this.torn = true;
    }
  }

  /** The open segment, or a new one when this append would grow it past its size (the old one goes once checkpointed). */
  private async segmentFor(bytes: number): Promise<FileHandle> {
    const limit = this.options.segmentBytes ?? DEFAULT_SEGMENT_BYTES;
    if (this.handle && !this.torn && this.segmentBytes + bytes <= limit) return this.handle;
    const old = this.handle;
    const oldPath = join(this.dir, `${this.segment}.jsonl`);
    const next = await open(join(this.dir, `${this.segment + 1}.jsonl`), 'a', PRIVATE_FILE_MODE);
    this.segment += 1;
    this.handle = next;
    this.segmentBytes = 0;
    this.torn = false;
    if (this.options.fsync) await syncDirectory(this.dir);
    if (old) {
      await old.close();
      // Every change of the old segment was asked for before this point: once the files hold them, it can go.
      void this.options
        .checkpoint()
        .then(() => this.discard([oldPath]))
        .catch(() => {});
    }
    return this.handle;
  }
}

/** Writes every byte of `buffer`, however many calls it takes; a call that writes nothing is a full disk. */
export function writeFully(write: NonNullable<JournalOptions['write']>, fd: number, buffer: Buffer): void {
  for (let offset = 0; offset < buffer.length;) {
    const written = write(fd, buffer, offset, buffer.length - offset);
    if (written <= 0)
      throw Object.assign(new Error(`wrote ${offset} of ${buffer.length} bytes: no space left on the device`), {
        code: 'ENOSPC',
      });
    offset += written;
  }
}

/**
 * The changes of a segment. What follows its last newline is a torn tail (an append cut by a
 * crash or a failed write, never acknowledged); a whole line that does not parse is damaged.
 */
function parseSegment(text: string): { changes: unknown[]; damaged: { line: number; reason: string }[] } {
  const changes: unknown[] = [];
  const damaged: { line: number; reason: string }[] = [];
  const lines = text.split('\n');
  // The piece after the last newline: empty, or a torn tail.
  lines.pop();
  lines.forEach((line, index) => {
    if (line === '') return;
    try {
      changes.push(JSON.parse(line));
    } catch (error) {
      damaged.push({ line: index + 1, reason: error instanceof Error ? error.message : String(error) });
    }
  });
  return { changes, damaged };
}
