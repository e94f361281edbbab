/*
 * Records kept one file each (runs/<id>.json, steers/<id>.json), with an index file of the
 * ids still open (open-runs.json, open-steers.json) so recovery never scans the directory.
 * An id is in the index on disk before its first record is written; it leaves the index only
 * when the owner says the record is closed (for a run: its terminal event is durable).
 * Each file is a lowdb document (json-document.ts), written through the coalescer.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { z } from 'zod';
import { idPath } from './file-names.js';
import { LruMap } from './lru-map.js';
import { readJsonDocument } from './json-document.js';
import { errorCode } from './read-json-file.js';
import { isStoreError } from './store-error.js';
import type { WriteCoalescer } from './write-coalescer.js';

export interface RecordFilesOptions<T> {
  /** Folder of the record files. */
  dir: string;
  /** The index file and the key of its id list ({ [indexKey]: string[] }). */
  indexPath: string;
  indexKey: string;
  record: z.ZodType<T>;
  idOf(record: T): string;
  /** A record that opens its id (a run not ended, a steer pending). */
  opens(record: T): boolean;
  writer: WriteCoalescer;
  /** Ids found in the index when the store was opened. */
  open: string[];
  cached: number;
  /**
   * Called for each file or directory read from disk (the store counts them).
   * @default none
   */
  onRead?: () => void;
  /**
   * Throws the error an id answers with instead of its file (a quarantined record).
   * @default none: every id is read from its file
   */
  check?: (id: string) => void;
  /**
   * A damaged record file (a `corrupt_file` error) openRecords and scan leave out; id undefined
   * when scan found it.
   * @default none: a damaged file's `corrupt_file` error is thrown
   */
  onDamaged?: (id: string | undefined, error: unknown) => Promise<void>;
}

interface Cached<T> {
  record: T;
  path: string;
}

export class RecordFiles<T> {
  private readonly cache: LruMap<string, Cached<T>>;
  private readonly open: Set<string>;
  /** Open ids whose index entry is not on disk yet: their first record waits for it. */
  private readonly beingIndexed = new Map<string, Promise<void>>();
  /** Record writes in flight (what is appended about a record waits for it). */
  private readonly writes = new Map<string, Promise<void>>();

  constructor(private readonly options: RecordFilesOptions<T>) {
    this.open = new Set(options.open);
    this.cache = new LruMap(options.cached, ({ record, path }) => !options.opens(record) && !options.writer.has(path));
  }

  /** Writes the record; `after` is what must be on disk before it (what points at the record). */
  save(record: T, onWritten?: () => void, after?: Promise<unknown>): Promise<void> {
    const id = this.options.idOf(record);
    const path = this.pathOf(id);
    this.cache.set(id, { record, path });
    let indexed: Promise<void> | undefined;
    if (this.options.opens(record)) {
      if (!this.open.has(id)) {
        this.open.add(id);
        const written = this.writeIndex();
        this.beingIndexed.set(id, written);
        const done = () => {
          if (this.beingIndexed.get(id) === written) this.beingIndexed.delete(id);
        };
        written.then(done, done);
      }
      indexed = this.beingIndexed.get(id);
    }
    const ready = indexed && after ? Promise.all([indexed, after]) : (indexed ?? after);
    // Awaited only when the write starts, maybe a checkpoint delay later: its failure is that write's, not an unhandled
    // one. A retry of the write (a full disk had room again) waits for the index's next write instead.
    let failed = false;
    ready?.catch(() => (failed = true));
    const waitFor = () => (!failed ? ready : indexed && this.open.has(id) ? this.writeIndex() : undefined);
    // Serialized when the write starts: of the saves a checkpoint folds together, only the last is.
    const written = this.options.writer.write(path, () => ({
      data: record,
      ready: waitFor(),
      ...(onWritten ? { onWritten } : {}),
    }));
    this.writes.set(id, written);
    const done = () => {
      if (this.writes.get(id) === written) this.writes.delete(id);
    };
    written.then(done, done);
    return written;
  }

  async get(id: string): Promise<T | undefined> {
    this.options.check?.(id);
    const cached = this.cache.get(id);
    if (cached) return cached.record;
    const path = this.pathOf(id);
    this.options.onRead?.();
    const record = await readJsonDocument(path, this.options.record);
    if (!record || this.options.idOf(record) !== id) return undefined;
    // A save that landed while the file was read is newer.
    if (!this.cache.peek(id)) this.cache.set(id, { record, path });
    return this.cache.peek(id)?.record ?? record;
  }

  /** The record as last saved or read, if it is in memory (no disk read). */
  peek(id: string): T | undefined {
    return this.cache.peek(id)?.record;
  }

  /** The record write in flight for `id`, if any. */
  writing(id: string): Promise<void> | undefined {
    return this.writes.get(id);
  }

  /** The records of the open ids, in the order they opened; ids whose record never landed are dropped. */
  async openRecords(): Promise<T[]> {
    const ids = [...this.open];
    const damaged = new Set<string>();
    const records = await Promise.all(
      ids.map((id) => this.get(id).catch((error: unknown) => this.damaged(id, error, damaged))),
    );
    let dropped = false;
    const found: T[] = [];
    records.forEach((record, i) => {
      if (record) found.push(record);
      else if (damaged.has(ids[i]!)) return;
      // A crash between the index write and the record's first write.
      else if (!this.writes.has(ids[i]!)) dropped = this.open.delete(ids[i]!) || dropped;
    });
    if (dropped) void this.writeIndex();
    return found;
  }

  /** The record is closed: its id leaves the index. */
  close(id: string): void {
    if (this.open.delete(id)) void this.writeIndex();
  }

  /** Every record on disk (and in memory), for queries over closed records. */
  async scan(): Promise<T[]> {
    const byId = new Map<string, T>();
    this.options.onRead?.();
    for (const shard of await readdirOrEmpty(this.options.dir)) {
      this.options.onRead?.();
      for (const name of await readdirOrEmpty(join(this.options.dir, shard))) {
        if (name.startsWith('.') || !name.endsWith('.json')) continue;
        this.options.onRead?.();
        const record = await readJsonDocument(join(this.options.dir, shard, name), this.options.record).catch(
          (error: unknown) => this.damaged(undefined, error, new Set()),
        );
        if (record) byId.set(this.options.idOf(record), record);
      }
    }
    for (const { record } of this.cache.values()) byId.set(this.options.idOf(record), record);
    return [...byId.values()];
  }

  /** Reports a damaged record (to be left out) if the store takes reports; any other error is thrown on. */
  private async damaged(id: string | undefined, error: unknown, into: Set<string>): Promise<undefined> {
    if (!this.options.onDamaged || !isStoreError(error) || error.code !== 'corrupt_file') throw error;
    if (id !== undefined) into.add(id);
    await this.options.onDamaged(id, error);
    return undefined;
  }

  trim(): void {
    this.cache.trim();
  }

  get cachedCount(): number {
    return this.cache.size;
  }

  private pathOf(id: string): string {
    return join(this.options.dir, `${idPath(id)}.json`);
  }

  private writeIndex(): Promise<void> {
    return this.options.writer.write(this.options.indexPath, () => ({
      data: { [this.options.indexKey]: [...this.open] },
    }));
  }
}

async function readdirOrEmpty(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return [];
    throw error;
  }
}
