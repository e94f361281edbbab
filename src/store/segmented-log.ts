/*
 * An append-only list kept as a directory of segment files, each named by the key of its
 * first item (`000000000001.json` holds the items from key 1 on), one JSON array per file.
 * Only the last segment is rewritten on append, so an append costs the same however long the
 * list is; a full segment leaves memory once it is on disk and is read back on demand
 * through a cache shared by logs of one kind.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { segmentFileName, segmentKeyOf } from './file-names.js';
import type { LruMap } from './lru-map.js';
import { readJsonDocument } from './json-document.js';
import { errorCode } from './read-json-file.js';
import { isStoreError } from './store-error.js';
import type { FileSnapshot, WriteCoalescer } from './write-coalescer.js';

export interface SegmentLimits {
  /** Items per segment file. */
  items: number;
  /** Approximate characters per segment file; a larger single item gets a segment of its own. */
  bytes: number;
}

export interface SegmentedLogOptions<T> {
  dir: string;
  /** The shape of one stored item (checked when a segment is read from disk). */
  item: z.ZodType<T>;
  /**
   * The item's ordering key (e.g. seq).
   * @default none: items are keyed by position from 1
   */
  keyOf?: (item: T) => number;
  limits: SegmentLimits;
  writer: WriteCoalescer;
  /** Full segments, by path, shared by the logs of one kind. */
  cache: LruMap<string, Promise<T[]>>;
  /**
   * Called for each file or directory read from disk (the store counts them).
   * @default none
   */
  onRead?: () => void;
  /**
   * For a log that can be rebuilt (the runs index): a damaged segment is reported here and read
   * as empty.
   * @default none: reads of a damaged segment reject with its `corrupt_file` error
   */
  onDamaged?: (error: unknown) => void;
}

interface Segment<T> {
  first: number;
  path: string;
  items: T[];
  /** Each item's JSON, so a rewrite joins strings instead of serializing the segment again. */
  texts: string[];
  chars: number;
  /** What items not yet written refer to: their write waits for these. */
  deps: Promise<unknown>[];
  /** Items in the content last renamed into place. */
  saved: number;
  /** The write asked for by the latest append. */
  lastWrite: Promise<void> | undefined;
}

export class SegmentedLog<T> {
  readonly ready: Promise<void>;
  private state: 'loading' | 'ready' | 'broken' = 'loading';
  /** First key of every segment, ascending; the last one is the tail. */
  private firsts: number[] = [];
  private tail: Segment<T> | undefined;
  /** Full segments whose content is not all on disk yet. */
  private readonly unsaved = new Map<number, Segment<T>>();
  private appendsWaitingForLoad = 0;
  private count = 0;
  private readonly segmentSchema: z.ZodType<T[]>;

  constructor(private readonly options: SegmentedLogOptions<T>) {
    this.segmentSchema = segmentSchemaOf(options.item);
    this.ready = this.load();
    // A load failure is reported to every read and append of this log.
    this.ready.catch(() => {});
  }

  /** Nothing is waiting to be loaded or written, so the log can be dropped and read again later. */
  get idle(): boolean {
    return (
      this.state !== 'loading' &&
      this.appendsWaitingForLoad === 0 &&
      this.unsaved.size === 0 &&
      !(this.tail && this.options.writer.has(this.tail.path))
    );
  }

  /**
   * Adds an item; visible to reads at once, on disk when the promise resolves. `dependsOn`
   * is what the item refers to: the segment is not written before it has resolved.
   */
  append(item: T, dependsOn?: Promise<unknown>): Promise<void> {
    if (this.state === 'ready') return this.appendLoaded(item, dependsOn);
    this.appendsWaitingForLoad += 1;
    return this.ready.then(
      () => {
        this.appendsWaitingForLoad -= 1;
        return this.appendLoaded(item, dependsOn);
      },
      (error: unknown) => {
        this.appendsWaitingForLoad -= 1;
        throw error;
      },
    );
  }

  /** How many items the log holds, once it is loaded (undefined while it loads). */
  loadedSize(): number | undefined {
    return this.state === 'ready' ? this.count : undefined;
  }

  /** The items with key > after, in order. */
  async readAfter(after = 0): Promise<T[]> {
    await this.ready;
    const found: T[] = [];
    // Keys are whole numbers: the first wanted one is in the last segment starting at or before after + 1.
    for (
      let index = Math.max(0, upperBound(this.firsts, Math.floor(after) + 1) - 1);
      index < this.firsts.length;
      index++
    ) {
      const first = this.firsts[index]!;
      const items = await this.segmentItems(first);
      for (let i = this.firstAfter(first, items, after); i < items.length; i++) found.push(items[i]!);
    }
    return found;
  }

  /**
   * The items with key < before, highest key first, reading a segment only when the walk
   * reaches it (stop early with `break`). Items appended meanwhile are not visited.
   */
  async *readBackward(before = Number.POSITIVE_INFINITY): AsyncGenerator<T> {
    await this.ready;
    const firsts = [...this.firsts];
    // The last segment that can hold a key below `before` starts below it.
    for (let index = lowerBound(firsts, before) - 1; index >= 0; index--) {
      const first = firsts[index]!;
      const items = await this.segmentItems(first);
      for (let i = this.firstAfter(first, items, before - 1) - 1; i >= 0; i--) yield items[i]!;
    }
  }

  /** The last item, reading only the tail segment. */
  async last(): Promise<T | undefined> {
    await this.ready;
    const first = this.firsts.at(-1);
    if (first === undefined) return undefined;
    return (await this.segmentItems(first)).at(-1);
  }

  /** The item with this key (keyed logs). */
  async get(key: number): Promise<T | undefined> {
    await this.ready;
    const segment = upperBound(this.firsts, key) - 1;
    if (segment < 0) return undefined;
    const first = this.firsts[segment]!;
    const items = await this.segmentItems(first);
    const index = this.firstAfter(first, items, key - 1);
    const item = items[index];
    return item !== undefined && this.keyAt(first, item, index) === key ? item : undefined;
  }

  private appendLoaded(item: T, dependsOn: Promise<unknown> | undefined): Promise<void> {
    const text = JSON.stringify(item);
    const { limits, keyOf } = this.options;
    let segment = this.tail;
    if (
      !segment ||
      segment.items.length >= limits.items ||
      (segment.items.length > 0 && segment.chars + text.length > limits.bytes)
    ) {
      segment = this.openSegment(keyOf ? keyOf(item) : this.count + 1);
    }
    segment.items.push(item);
    segment.texts.push(text);
    segment.chars += text.length + 2;
    if (dependsOn) segment.deps.push(dependsOn);
    this.count += 1;
    const target = segment;
    segment.lastWrite = this.options.writer.write(segment.path, () => this.snapshot(target));
    return segment.lastWrite;
  }

  private openSegment(key: number): Segment<T> {
    const previous = this.tail;
    // Keys only grow; should one not, the new segment still never replaces an older file.
    const first = Math.max(key, (this.firsts.at(-1) ?? 0) + 1);
    const segment: Segment<T> = {
      first,
      path: this.pathOf(first),
      items: [],
      texts: [],
      chars: 0,
      deps: [],
      saved: 0,
      lastWrite: undefined,
    };
    if (previous) {
      if (previous.saved < previous.items.length || this.options.writer.has(previous.path)) {
        this.unsaved.set(previous.first, previous);
        // What is on disk stays a prefix of the log: no segment lands before the one it follows.
        if (previous.lastWrite) segment.deps.push(previous.lastWrite);
      } else {
        this.options.cache.set(previous.path, Promise.resolve(previous.items));
      }
    }
    this.firsts.push(first);
    this.tail = segment;
    return segment;
  }

  private snapshot(segment: Segment<T>): FileSnapshot {
    const count = segment.items.length;
    const deps = segment.deps;
    segment.deps = [];
    const texts = segment.texts;
    return {
      // The segment's items, written as the texts it keeps of them (one JSON.stringify per item, ever).
      data: segment.items.slice(0, count),
      format: (items) => `[\n${texts.slice(0, (items as unknown[]).length).join(',\n')}\n]\n`,
      ready: deps.length > 0 ? Promise.all(deps) : undefined,
      onWritten: () => this.saved(segment, count),
    };
  }

  private saved(segment: Segment<T>, count: number): void {
    segment.saved = Math.max(segment.saved, count);
    if (
      segment !== this.tail &&
      segment.saved === segment.items.length &&
      this.unsaved.get(segment.first) === segment
    ) {
      this.unsaved.delete(segment.first);
      segment.texts = [];
      this.options.cache.set(segment.path, Promise.resolve(segment.items));
    }
  }

  private segmentItems(first: number): Promise<T[]> | T[] {
    if (this.tail?.first === first) return this.tail.items;
    const unsaved = this.unsaved.get(first);
    if (unsaved) return unsaved.items;
    const path = this.pathOf(first);
    let items = this.options.cache.get(path);
    if (!items) {
      this.options.onRead?.();
      const reading = this.readSegment(path);
      items = reading;
      this.options.cache.set(path, reading);
      // A damaged file is read again next time (it may have been restored meanwhile).
      reading.catch(() => {
        if (this.options.cache.peek(path) === reading) this.options.cache.delete(path);
      });
    }
    return items;
  }

  private async readSegment(path: string): Promise<T[]> {
    try {
      return (await readJsonDocument(path, this.segmentSchema)) ?? [];
    } catch (error) {
      if (!this.options.onDamaged || !isStoreError(error) || error.code !== 'corrupt_file') throw error;
      this.options.onDamaged(error);
      return [];
    }
  }

  /** Index of the first item of a segment whose key is greater than `after`. */
  private firstAfter(first: number, items: T[], after: number): number {
    let lo = 0;
    let hi = items.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.keyAt(first, items[mid]!, mid) <= after) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  private keyAt(first: number, item: T, index: number): number {
    return this.options.keyOf ? this.options.keyOf(item) : first + index;
  }

  private pathOf(first: number): string {
    return join(this.options.dir, segmentFileName(first));
  }

  private async load(): Promise<void> {
    try {
      let names: string[] = [];
      try {
        this.options.onRead?.();
        // Listing a directory (most often one that does not exist yet: a new run's log) takes a
        // few microseconds on this thread; through the thread pool, or by catching ENOENT, it
        // costs ten times that in promise and error objects, on every new run.
        if (existsSync(this.options.dir)) names = readdirSync(this.options.dir);
      } catch (error) {
        if (errorCode(error) !== 'ENOENT') throw error;
      }
      this.firsts = names.flatMap((name) => segmentKeyOf(name) ?? []).sort((a, b) => a - b);
      const last = this.firsts.at(-1);
      if (last !== undefined) {
        const path = this.pathOf(last);
        this.options.onRead?.();
        const items = await this.readSegment(path);
        const texts = items.map((item) => JSON.stringify(item));
        const chars = texts.reduce((sum, text) => sum + text.length + 2, 0);
        this.tail = { first: last, path, items, texts, chars, deps: [], saved: items.length, lastWrite: undefined };
        this.count = last + items.length - 1;
      }
      this.state = 'ready';
    } catch (error) {
      this.state = 'broken';
      throw error;
    }
  }
}

/** One array schema per item schema: building a zod schema for every new log (every run) is not free. */
const segmentSchemas = new WeakMap<z.ZodType, z.ZodType>();

function segmentSchemaOf<T>(item: z.ZodType<T>): z.ZodType<T[]> {
  let schema = segmentSchemas.get(item) as z.ZodType<T[]> | undefined;
  if (!schema) {
    schema = z.array(item);
    segmentSchemas.set(item, schema);
  }
  return schema;
}

/** Index of the first element not less than `value` in an ascending array. */
function lowerBound(sorted: readonly number[], value: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Index of the first element greater than `value` in an ascending array. */
function upperBound(sorted: readonly number[], value: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! <= value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
