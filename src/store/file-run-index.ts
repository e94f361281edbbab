/*
 * The file store's runs index (run-index.ts) under `runs-index/`:
 *
 *   runs-index/version.json                          {version}: written once the index is complete
 *   runs-index/all/<first position>.json             every run's entries
 *   runs-index/session/<id>/<first position>.json    a session's
 *   runs-index/state/<state>/…                       each terminal state's
 *   runs-index/outcome/<state>/<outcome id>/…        each (terminal state, outcome)'s
 *
 * each a segmented log of [position, runId, state, outcome] entries keyed by position. A run's
 * record file holds its position too (`indexPosition`), and is written only after its entries
 * are on disk, so an entry whose run does not hold its position (a crash between the two, a
 * run that ended since) is recognised and skipped. The runs not ended are kept in memory. A
 * store without a complete index (older data, a crash while building it) gets it rebuilt
 * from the run files when it is opened.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { isTerminalState } from '../core/run-status.js';
import { idPath } from './file-names.js';
import { LruMap } from './lru-map.js';
import { readJsonDocument, writeJsonDocument } from './json-document.js';
import { makePrivateDir } from './private-file.js';
import type { RecordFiles } from './record-files.js';
import { placeRun, type PlacedRun, type RunIndexEntry, type RunIndexReader, type RunList } from './run-index.js';
import { runOutcomeOf } from './run-summary.js';
import { SegmentedLog, type SegmentLimits } from './segmented-log.js';
import type { RunRecord, RunState } from './types.js';
import type { WriteCoalescer } from './write-coalescer.js';

/** A run record as the file store keeps it: with its position in the index. */
export type StoredRunRecord = RunRecord & { indexPosition?: number };

const VERSION = 1;
const VersionFile = z.object({ version: z.number() });
const RunStates = z.enum(['queued', 'running', 'completed', 'cancelled', 'failed']);
const StoredEntry = z.tuple([z.number().int(), z.string(), RunStates, z.string().nullable()]);
const ENDED_STATES: RunState[] = ['completed', 'cancelled', 'failed'];

export interface FileRunIndexOptions {
  /** The store's directory (the index lives in its `runs-index/`). */
  dir: string;
  records: RecordFiles<StoredRunRecord>;
  writer: WriteCoalescer;
  limits: SegmentLimits;
  /** Lists kept open, and full segments kept in memory after they were read back. */
  openLists: number;
  cachedSegments: number;
  onRead: () => void;
  /** A damaged list segment, left out of every page (the index is rebuilt from the run files when the store next opens). */
  onDamaged: (error: unknown) => void;
  /**
   * Build the index anew from the run files, whatever is there (a damaged one).
   * @default false: rebuilt only when the index is not complete
   */
  rebuild?: boolean;
}

export class FileRunIndex implements RunIndexReader {
  /** Opens the index of a store, rebuilding it from the run files when it is not complete. */
  static async open(options: FileRunIndexOptions): Promise<FileRunIndex> {
    const index = new FileRunIndex(options);
    const version = options.rebuild ? undefined : await readJsonDocument(index.versionPath, VersionFile);
    if (version?.version === VERSION) await index.load();
    else await index.rebuild();
    return index;
  }

  private readonly root: string;
  private readonly lists: LruMap<string, SegmentedLog<RunIndexEntry>>;
  private readonly segments: LruMap<string, Promise<RunIndexEntry[]>>;
  private lastPosition = 0;
  /** Runs not ended, by id: small (what is running or waits), so kept whole in memory. */
  private readonly notEnded = new Map<string, PlacedRun>();
  /** Entries of a run not yet on disk: its record is written after them. */
  private readonly appending = new Map<string, Promise<void>>();

  private constructor(private readonly options: FileRunIndexOptions) {
    this.root = join(options.dir, 'runs-index');
    this.lists = new LruMap(options.openLists, (log) => log.idle);
    this.segments = new LruMap(options.cachedSegments);
  }

  private get versionPath(): string {
    return join(this.root, 'version.json');
  }

  /**
   * Places a saved run and appends its new entries. Returns the record to store (with its
   * position) and what its write must wait for: the run's entries still on their way to disk.
   */
  place(record: RunRecord): { stored: StoredRunRecord; after: Promise<void> | undefined } {
    return this.placeAfter(record, this.placedOf(record.runId));
  }

  private placeAfter(
    record: RunRecord,
    previous: PlacedRun | undefined,
  ): { stored: StoredRunRecord; after: Promise<void> | undefined } {
    const { runId } = record;
    const { placed, lists, entry } = placeRun(record, previous, () => ++this.lastPosition);
    if (isTerminalState(placed.state)) this.notEnded.delete(runId);
    else this.notEnded.set(runId, placed);
    const stored: StoredRunRecord = { ...record, indexPosition: placed.position };
    if (lists.length > 0) {
      const earlier = this.appending.get(runId);
      const appended = Promise.all([earlier, ...lists.map((list) => this.list(list).append(entry))]).then(() => {});
      this.appending.set(runId, appended);
      const done = () => {
        if (this.appending.get(runId) === appended) this.appending.delete(runId);
      };
      appended.then(done, done);
    }
    return { stored, after: this.appending.get(runId) };
  }

  async *backward(list: RunList, before: number): AsyncIterable<RunIndexEntry> {
    yield* this.list(list).readBackward(before);
  }

  *unended(before: number): Iterable<RunIndexEntry> {
    const runs = [...this.notEnded]
      .filter(([, placed]) => placed.position < before)
      .sort(([, a], [, b]) => b.position - a.position);
    for (const [runId, { position, state }] of runs) yield [position, runId, state, null];
  }

  async current([position, runId, state]: RunIndexEntry): Promise<RunRecord | undefined> {
    const unended = this.notEnded.get(runId);
    // A run not ended holds the position of its first save; any other entry of it is stale.
    if (unended) return unended.position === position ? this.options.records.get(runId) : undefined;
    if (!isTerminalState(state)) return undefined;
    const record = await this.options.records.get(runId);
    return record?.indexPosition === position && isTerminalState(record.state) ? record : undefined;
  }

  /** The lists still being loaded (appends to them reach the writer once they are). */
  loading(): Promise<void>[] {
    return [...this.lists.values()].map((log) => log.ready);
  }

  /** Lists with writes in flight are kept; the others may leave memory. */
  trim(): void {
    this.lists.trim();
  }

  get openLists(): number {
    return this.lists.size;
  }

  private placedOf(runId: string): PlacedRun | undefined {
    const unended = this.notEnded.get(runId);
    if (unended) return unended;
    const cached = this.options.records.peek(runId);
    if (cached?.indexPosition === undefined) return undefined;
    return { position: cached.indexPosition, state: cached.state, outcome: runOutcomeOf(cached) };
  }

  private list(list: RunList): SegmentedLog<RunIndexEntry> {
    const dir = join(this.root, ...listPath(list));
    let log = this.lists.get(dir);
    if (!log) {
      log = new SegmentedLog({
        dir,
        item: StoredEntry,
        keyOf: (entry) => entry[0],
        limits: this.options.limits,
        writer: this.options.writer,
        cache: this.segments,
        onRead: this.options.onRead,
        onDamaged: this.options.onDamaged,
      });
      this.lists.set(dir, log);
    }
    return log;
  }

  /** Picks up a complete index: the last position from the lists' tails, the runs not ended from the open records. */
  private async load(): Promise<void> {
    const tails = [{ kind: 'all' } as const, ...ENDED_STATES.map((state) => ({ kind: 'state', state }) as const)];
    for (const list of tails) this.lastPosition = Math.max(this.lastPosition, (await this.list(list).last())?.[0] ?? 0);
    for (const record of await this.options.records.openRecords()) {
      if (isTerminalState(record.state)) continue;
      if (record.indexPosition === undefined) {
        // Saved by a Switchyard that did not keep the index (after this one built it): placed anew.
        const { stored, after } = this.placeAfter(record, undefined);
        await this.options.records.save(stored, undefined, after);
        continue;
      }
      this.notEnded.set(record.runId, { position: record.indexPosition, state: record.state, outcome: undefined });
    }
  }

  /** Builds the index from every run file, oldest first, then marks it complete. */
  private async rebuild(): Promise<void> {
    await rm(this.root, { recursive: true, force: true });
    const records = (await this.options.records.scan()).sort((a, b) =>
      a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.runId < b.runId ? -1 : 1,
    );
    const written: Promise<void>[] = [];
    for (const record of records) {
      const { indexPosition: _old, ...plain } = record;
      const { stored, after } = this.placeAfter(plain, undefined);
      written.push(this.options.records.save(stored, undefined, after));
    }
    await Promise.all(written);
    await makePrivateDir(this.root);
    await writeJsonDocument(this.versionPath, { version: VERSION }, { format: (data) => `${JSON.stringify(data)}\n` });
  }
}

function listPath(list: RunList): string[] {
  switch (list.kind) {
    case 'all':
      return ['all'];
    case 'session':
      return ['session', idPath(list.sessionId)];
    case 'state':
      return ['state', list.state];
    case 'outcome':
      return ['outcome', list.state, idPath(list.outcome)];
  }
}
