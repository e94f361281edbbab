/*
 * The file store (README, "Persistence and restart"): JSON files under a data directory, each replaced atomically by
 * a private temp file renamed into place (private-file.ts: files 0600, directories 0700), none
 * growing without bound. Every file but the journal's is a lowdb document (json-document.ts).
 * Layout under `dir`:
 *
 *   switchyard-store.json                      format marker {format, version}
 *   LOCK                                       pid of the process that has the store open
 *   journal/<n>.jsonl                          the write-ahead journal (segments not yet checkpointed)
 *   open-runs.json                             ids of runs whose end is not fully stored (shrinks as runs end)
 *   open-steers.json                           ids of steers not yet consumed or handed over
 *   lanes.json                                 the non-empty wait lanes
 *   grants.json                                sessions' approval grants (action fingerprints)
 *   runs/<id>.json                             one run record per file
 *   steers/<id>.json                           one steer record per file
 *   events/<id>/<first seq>.json               a run's event log, in segments
 *   sessions/<id>/events/<first sessionSeq>.json   the session's log: [sessionSeq, runId, seq] entries
 *   sessions/<id>/conversation/<first index>.json  the session's conversation, in segments
 *   runs-index/…                               the runs by position, for queryRuns (file-run-index.ts)
 *
 * where <id> is `<shard>/<sanitized id>-<hash>` (file-names.ts). Open it with
 * `await LowdbStore.open(dir)`.
 *
 * Every change is first appended to a write-ahead journal (journal.ts): a write's promise
 * resolves once its journal line is on disk, and concurrent changes share one append (group
 * commit; with fsync, one flush). The files below are then written in the background; after
 * a crash, the journal is replayed over them at open. Reads see every write at once. A file
 * write completes when its file is renamed into place (which survives the process being
 * killed; surviving power loss would also take an fsync, which this writer does not do).
 * Writes are ordered so that a crash at any moment leaves what is on disk consistent: a run's
 * id is in open-runs.json before its record is written, and leaves it only once its terminal
 * event is in its log and the session's log; the run's record (and the lanes) as they were
 * when an event was appended land before the event; a log's segment lands only after the one before it, so every log on disk
 * is a prefix of what was appended; an event is in its run's log before the session's log
 * points at it.
 *
 * A damaged file (it can only be damaged from outside: every write replaces a file whole) is
 * reported as a StoreError `corrupt_file` naming it, by the reads and appends that need it;
 * other runs and sessions carry on. Found while the store opens (replaying the journal after a
 * crash), it is moved to quarantine/ and its run, session or steer answers `corrupt_file` from
 * then on (quarantine.ts); a damaged runs-index file gets the index rebuilt; a damaged journal
 * line is skipped. Each is reported (options.onDamaged, health()). open() fails only when
 * open-runs.json or lanes.json is damaged. Temp files of interrupted writes (`.<name>.tmp`) are
 * never read.
 *
 * A full disk: writes are refused (their journal batch fails whole) and reads answer; health()
 * says so, and once a probe write finds room again the store takes writes again and the files
 * catch up. A store opened on a full disk opens: the journal's old segments stay until the
 * files hold what they hold.
 */
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join, relative, resolve } from 'node:path';
import { z } from 'zod';
import type { RunEvent } from '../core/run-events.js';
import { isTerminalEvent } from '../core/run-events.js';
import type { Message } from '../model/types.js';
import { idPath } from './file-names.js';
import { Journal } from './journal.js';
import { LruMap } from './lru-map.js';
import { PendingWrites } from './pending-writes.js';
import { readJsonDocument, writeJsonDocument } from './json-document.js';
import { ensurePrivateDir } from './private-file.js';
import { SegmentedLog, type SegmentLimits } from './segmented-log.js';
import { Quarantine, type QuarantineEntry, type QuarantineKind } from './quarantine.js';
import { isStoreError, StoreError } from './store-error.js';
import { acquireStoreLock } from './store-lock.js';
import { isTerminalState } from '../core/run-status.js';
import { RecordFiles } from './record-files.js';
import { FileRunIndex, type StoredRunRecord } from './file-run-index.js';
import { queryPage } from './run-index.js';
import type {
  RunPage,
  RunQuery,
  RunRecord,
  RunState,
  SteerRecord,
  Store,
  StoredLaneEntry,
  StoreHealth,
} from './types.js';
import { WriteCoalescer } from './write-coalescer.js';

export interface LowdbStoreOptions {
  /**
   * How long the files wait behind the journal, so more changes fold into each file write.
   * @default 200 (ms)
   */
  checkpointDelayMs?: number;
  /**
   * Size of a journal segment before a new one starts.
   * @default 8388608 (8 MiB)
   */
  journalSegmentBytes?: number;
  /**
   * fsync every file and directory before a write counts as done, so it survives a power loss.
   * @default false
   */
  fsync?: boolean;
  /**
   * Items (events, session log entries, messages) per segment file.
   * @default 256
   */
  segmentItems?: number;
  /**
   * Approximate size cap of a segment file, in characters.
   * @default 1048576 (1 MiB)
   */
  segmentBytes?: number;
  /**
   * Event logs, session logs and conversations of each kind kept in memory (beyond those with
   * writes in flight).
   * @default 256
   */
  openLogs?: number;
  /**
   * Full segments of each kind kept in memory after they were read back.
   * @default 64
   */
  cachedSegments?: number;
  /**
   * Each piece of damage found and worked around (a skipped journal line, a quarantined file,
   * a run left out of a list), as one line for the log. Must not throw.
   * @default none: the damage is only kept for health()
   */
  onDamaged?: (report: string) => void;
}

export interface LowdbStoreStats {
  /** Journal appends since open: one per group of changes asked for together. */
  journalWrites: number;
  /** Files renamed into place since open. */
  fileWrites: number;
  /** Files and directories read from disk since open (what a query touched, when asked around it). */
  fileReads: number;
  /** Files with a write scheduled, running or failed. */
  pendingFiles: number;
  openLogs: number;
  /** Lists of the runs index in memory. */
  openIndexLists: number;
  cachedSegments: number;
  cachedRecords: number;
}

const FORMAT = { format: 'switchyard-lowdb', version: 1 } as const;
const RECORDS_KEPT = 1024;
/** The journal makes every change durable at once; the files may lag this much behind it. */
const CHECKPOINT_DELAY_MS = 200;
/** Damage reports kept for health() (each is also given to onDamaged). */
const DAMAGE_KEPT = 100;
/** Free space a probe write must find before a store whose writes failed takes writes again. */
const PROBE_BYTES = 64 * 1024;

const FormatFile = z.object({ format: z.string(), version: z.number() });
const OpenRunsFile = z.object({ runs: z.array(z.string()) });
const OpenSteersFile = z.object({ steers: z.array(z.string()) });
const LaneEntry = z.object({
  runId: z.string(),
  viaInterrupt: z.boolean(),
  viaRollback: z.boolean().optional(),
  rollsBack: z.string().optional(),
  leaveBy: z.string().optional(),
  summarizes: z.array(z.string()).optional(),
});
const LanesFile = z.object({ lanes: z.array(z.tuple([z.string(), z.array(LaneEntry)])) });
const GrantsFile = z.object({ grants: z.array(z.tuple([z.string(), z.array(z.string())])) });

const RunStates = z.enum(['queued', 'running', 'completed', 'cancelled', 'failed']);
const EventShape = z.looseObject({
  type: z.string(),
  runId: z.string(),
  sessionId: z.string(),
  seq: z.number().int(),
  sessionSeq: z.number().int(),
  at: z.string(),
});
const StoredEvent = z.custom<RunEvent>((value) => EventShape.safeParse(value).success, 'not a run event');
const RecordShape = z.looseObject({
  runId: z.string(),
  sessionId: z.string(),
  agentId: z.string(),
  state: RunStates,
  createdAt: z.string(),
  request: z.looseObject({}),
});
const StoredRecord = z.custom<StoredRunRecord>((value) => RecordShape.safeParse(value).success, 'not a run record');
const SteerShape = z.looseObject({
  steerId: z.string(),
  sessionId: z.string(),
  into: z.string(),
  state: z.enum(['pending', 'consumed', 'requeued', 'merged']),
  createdAt: z.string(),
  request: z.looseObject({}),
});
const StoredSteer = z.custom<SteerRecord>((value) => SteerShape.safeParse(value).success, 'not a steer record');
const MessageShape = z.looseObject({ role: z.enum(['system', 'user', 'assistant', 'tool']), content: z.string() });
const StoredMessage = z.custom<Message>((value) => MessageShape.safeParse(value).success, 'not a message');

/** One line of the journal: a change, as the write method that made it received it. */
type JournalChange =
  | { k: 'run'; v: RunRecord }
  | { k: 'steer'; v: SteerRecord }
  | { k: 'event'; v: RunEvent }
  | { k: 'messages'; s: string; at: number; v: Message[] }
  | { k: 'lane'; s: string; v: StoredLaneEntry[] }
  | { k: 'grants'; s: string; v: string[] };

/** A session log entry: the event with this sessionSeq is `seq` of run `runId`. */
type SessionEntry = [sessionSeq: number, runId: string, seq: number];
const StoredSessionEntry = z.tuple([z.number().int(), z.string(), z.number().int()]);

export class LowdbStore implements Store {
  readonly kind = 'lowdb';

  /**
   * Opens (creating if needed) the store in `dir`. Fails with a StoreError when another
   * process has it open (`store_locked`), it holds another format (`unsupported_format`) or
   * open-runs.json or lanes.json is damaged (`corrupt_file`); any other damaged file is set
   * aside (quarantine.ts) and reported to options.onDamaged. Opens on a full disk too.
   */
  static async open(dir = '.switchyard', options: LowdbStoreOptions = {}): Promise<LowdbStore> {
    const root = resolve(dir);
    await ensurePrivateDir(root);
    const release = await acquireStoreLock(root);
    try {
      const markerPath = join(root, 'switchyard-store.json');
      const marker = await readJsonDocument(markerPath, FormatFile);
      if (!marker) {
        // On a full disk the marker is written at a later open; nothing reads it before then.
        await writeJsonDocument(markerPath, FORMAT, { sync: options.fsync === true }).catch(() => {});
      } else if (marker.format !== FORMAT.format || marker.version > FORMAT.version) {
        throw new StoreError(
          'unsupported_format',
          `${root} holds "${marker.format}" version ${marker.version}; this Switchyard reads ` +
            `"${FORMAT.format}" up to version ${FORMAT.version}: use a newer Switchyard or another directory`,
          { path: markerPath },
        );
      }
      const damage: string[] = [];
      const report = (line: string) => {
        if (damage.push(line) > DAMAGE_KEPT) damage.shift();
        options.onDamaged?.(line);
      };
      const quarantine = await Quarantine.open(root, (entry) => report(describeQuarantined(entry)));
      const openRuns = await readJsonDocument(join(root, 'open-runs.json'), OpenRunsFile);
      const lanes = await readJsonDocument(join(root, 'lanes.json'), LanesFile);
      // The other two can be done without: the open steers are found again by reading every steer, the grants asked for again.
      const openSteers = await readJsonDocument(join(root, 'open-steers.json'), OpenSteersFile).catch(
        (error: unknown) =>
          quarantine
            .isolate('file', 'open-steers.json', error)
            .then((isolated) => (isolated ? ('damaged' as const) : Promise.reject(error))),
      );
      const grants = await readJsonDocument(join(root, 'grants.json'), GrantsFile).catch((error: unknown) =>
        quarantine
          .isolate('file', 'grants.json', error)
          .then((isolated) => (isolated ? undefined : Promise.reject(error))),
      );
      const store = new LowdbStore(
        root,
        options,
        {
          openRuns: openRuns?.runs ?? [],
          openSteers: openSteers === 'damaged' ? [] : (openSteers?.steers ?? []),
          lanes: lanes?.lanes ?? [],
          grants: grants?.grants ?? [],
        },
        release,
        quarantine,
        { list: damage, report },
      );
      if (openSteers === 'damaged') {
        for (const steer of await store.steers.scan())
          if (steer.state === 'pending') void store.pendingWrites.track(store.steers.save(steer));
      }
      store.runIndex = await store.openRunIndex();
      const { journal, leftOver, segments, damaged } = await Journal.open(join(root, 'journal'), {
        fsync: options.fsync === true,
        // A segment goes only once the files hold it: failed file writes are redone first, and if they fail again it stays.
        checkpoint: () =>
          store.pendingWrites
            .settled()
            .catch(() => {})
            .then(() => store.writer.flush()),
        ...(options.journalSegmentBytes !== undefined ? { segmentBytes: options.journalSegmentBytes } : {}),
      });
      for (const line of damaged)
        report(
          `journal: line ${line.line} of ${relative(root, line.segment)} is damaged (${line.reason}); skipped, the lines after it were replayed`,
        );
      store.journal = journal;
      const changes = leftOver.filter(isJournalChange);
      if (changes.length < leftOver.length)
        report(
          `journal: ${leftOver.length - changes.length} line(s) parse but are not changes the store wrote; skipped`,
        );
      const replayed = await store.replay(changes);
      await store.repairAfterCrash(replayed);
      store.opening = false;
      try {
        await store.flush();
        // The files hold what the old segments held: they can go.
        await journal.discard(segments);
      } catch {
        // A full disk: the store opens all the same, and the old segments stay until the files hold them (health()).
        store.leftOverSegments = segments;
      }
      return store;
    } catch (error) {
      await release();
      throw error;
    }
  }

  private readonly writer: WriteCoalescer;
  /** File writes started and not finished: the checkpoint the journal waits for. */
  private readonly pendingWrites = new PendingWrites();
  /** Journal appends that wait for something first (a conversation still loading). */
  private readonly deferredAppends = new PendingWrites();
  private journal!: Journal;
  /** Runs whose terminal event is appended but whose files are not closed yet: not open any more. */
  private readonly ending = new Set<string>();
  private readonly limits: SegmentLimits;
  private readonly runLogs: LruMap<string, SegmentedLog<RunEvent>>;
  private readonly sessionLogs: LruMap<string, SegmentedLog<SessionEntry>>;
  private readonly conversations: LruMap<string, SegmentedLog<Message>>;
  private readonly eventSegments: LruMap<string, Promise<RunEvent[]>>;
  private readonly sessionSegments: LruMap<string, Promise<SessionEntry[]>>;
  private readonly messageSegments: LruMap<string, Promise<Message[]>>;
  private readonly runs: RecordFiles<StoredRunRecord>;
  private runIndex!: FileRunIndex;
  private fileReads = 0;
  private readonly countRead = () => {
    this.fileReads += 1;
  };
  private readonly steers: RecordFiles<SteerRecord>;
  private readonly lanes: Map<string, StoredLaneEntry[]>;
  private lanesWrite: Promise<void> | undefined;
  private readonly grants: Map<string, string[]>;
  private closed = false;
  /** Still in open(): a damaged file found now is quarantined; later, only reported. */
  private opening = true;
  /** Journal segments of a previous process the files did not yet hold when the store opened (a full disk). */
  private leftOverSegments: string[] = [];

  private constructor(
    readonly dir: string,
    private readonly options: LowdbStoreOptions,
    found: {
      openRuns: string[];
      openSteers: string[];
      lanes: [string, StoredLaneEntry[]][];
      grants: [string, string[]][];
    },
    private readonly releaseLock: () => Promise<void>,
    private readonly quarantine: Quarantine,
    private readonly damage: { list: string[]; report: (line: string) => void },
  ) {
    this.writer = new WriteCoalescer(options.fsync === true, options.checkpointDelayMs ?? CHECKPOINT_DELAY_MS);
    this.limits = { items: options.segmentItems ?? 256, bytes: options.segmentBytes ?? 1024 * 1024 };
    const openLogs = options.openLogs ?? 256;
    const cachedSegments = options.cachedSegments ?? 64;
    this.runLogs = new LruMap(openLogs, isIdle);
    this.sessionLogs = new LruMap(openLogs, isIdle);
    this.conversations = new LruMap(openLogs, isIdle);
    this.eventSegments = new LruMap(cachedSegments);
    this.sessionSegments = new LruMap(cachedSegments);
    this.messageSegments = new LruMap(cachedSegments);
    this.runs = new RecordFiles({
      dir: join(dir, 'runs'),
      indexPath: join(dir, 'open-runs.json'),
      indexKey: 'runs',
      record: StoredRecord,
      idOf: (record) => record.runId,
      opens: (record) => !isTerminalState(record.state),
      writer: this.writer,
      open: found.openRuns,
      cached: RECORDS_KEPT,
      onRead: this.countRead,
      check: (runId) => this.quarantine.check('run', runId),
      onDamaged: (runId, error) => this.damagedRecord('run', runId, error),
    });
    this.steers = new RecordFiles({
      dir: join(dir, 'steers'),
      indexPath: join(dir, 'open-steers.json'),
      indexKey: 'steers',
      record: StoredSteer,
      idOf: (record) => record.steerId,
      opens: (record) => record.state === 'pending',
      writer: this.writer,
      open: found.openSteers,
      cached: RECORDS_KEPT,
      onRead: this.countRead,
      check: (steerId) => this.quarantine.check('steer', steerId),
      onDamaged: (steerId, error) => this.damagedRecord('steer', steerId, error),
    });
    this.lanes = new Map(found.lanes);
    this.grants = new Map(found.grants);
  }

  // ---------------------------------------------------------------------------------------
  // Runs

  saveRun(record: RunRecord): Promise<void> {
    if (this.closed) return closedError();
    const refused = this.refusal('run', record.runId) ?? this.refusal('session', record.sessionId);
    if (refused) return refused;
    const { stored, after } = this.runIndex.place(record);
    void this.pendingWrites.track(this.runs.save(stored, undefined, after));
    return this.journal.append({ k: 'run', v: record });
  }

  async getRun(runId: string): Promise<RunRecord | undefined> {
    this.assertOpen();
    const stored = await this.runs.get(runId);
    return stored && withoutPosition(stored);
  }

  /** A page of runs from the index (file-run-index.ts): reads its lists' tails and the page's records. */
  async queryRuns(query: RunQuery): Promise<RunPage> {
    this.assertOpen();
    return queryPage(query, this.runIndex);
  }

  /**
   * Runs in any of `states`. Unended states are answered from open-runs.json, in the order the
   * runs opened; asking for an ended state reads every run file, ordered by createdAt.
   */
  async listRuns(states: readonly RunState[]): Promise<RunRecord[]> {
    this.assertOpen();
    const records = states.some(isTerminalState)
      ? (await this.runs.scan()).sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : 0))
      : await this.runs.openRecords();
    return records.filter((record) => states.includes(record.state)).map(withoutPosition);
  }

  /** Runs of a quarantined session are left out: recovery leaves that session alone. */
  async openRuns(): Promise<RunRecord[]> {
    this.assertOpen();
    return (await this.runs.openRecords())
      .filter((record) => !this.ending.has(record.runId) && !this.quarantine.has('session', record.sessionId))
      .map(withoutPosition);
  }

  saveSteer(record: SteerRecord): Promise<void> {
    if (this.closed) return closedError();
    const refused = this.refusal('steer', record.steerId) ?? this.refusal('session', record.sessionId);
    if (refused) return refused;
    const { steerId } = record;
    const settled = record.state !== 'pending';
    void this.pendingWrites.track(this.steers.save(record, settled ? () => this.steers.close(steerId) : undefined));
    return this.journal.append({ k: 'steer', v: record });
  }

  async getSteer(steerId: string): Promise<SteerRecord | undefined> {
    this.assertOpen();
    return this.steers.get(steerId);
  }

  async pendingSteers(): Promise<SteerRecord[]> {
    this.assertOpen();
    const open = await this.steers.openRecords();
    return open
      .filter((steer) => steer.state === 'pending' && !this.quarantine.has('session', steer.sessionId))
      .sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : 0));
  }

  /**
   * Applies the changes the journal kept from before a crash, in order; what the files already
   * hold is skipped (events up to a run log's last seq, messages up to a conversation's length).
   * Events go straight into their run logs: repairAfterCrash() then indexes every event the
   * session logs miss, in order.
   */
  private async replay(changes: JournalChange[]): Promise<Set<string>> {
    // Records, steers, lanes and grants: only the latest of each counts (saving an older one
    // again could move a run back, or give it a second place in the runs index).
    const runs = new Map<string, RunRecord>();
    const steers = new Map<string, SteerRecord>();
    const lanes = new Map<string, StoredLaneEntry[]>();
    const grants = new Map<string, string[]>();
    const events = new Map<string, RunEvent[]>();
    for (const c of changes) {
      if (c.k === 'run') runs.set(c.v.runId, c.v);
      else if (c.k === 'steer') steers.set(c.v.steerId, c.v);
      else if (c.k === 'lane') lanes.set(c.s, c.v);
      else if (c.k === 'grants') grants.set(c.s, c.v);
      else if (c.k === 'event') events.set(c.v.runId, [...(events.get(c.v.runId) ?? []), c.v]);
      else if (!this.quarantine.has('session', c.s)) {
        const log = this.conversationLog(c.s);
        if ((await this.loads(log.ready, 'session', c.s)) === false) continue;
        const missing = c.v.slice(Math.max(0, log.loadedSize()! - c.at));
        if (missing.length > 0) void this.appendMessages(c.s, missing);
      }
    }
    // A change of a quarantined run or session is not applied (appended again, it would be refused).
    const kept = (sessionId: string, kind: QuarantineKind, id: string) =>
      !this.quarantine.has('session', sessionId) && !this.quarantine.has(kind, id);
    for (const [runId, record] of runs) {
      const stored = await this.loads(this.runs.get(runId), 'run', runId);
      if (stored === false || !kept(record.sessionId, 'run', runId)) continue;
      if (!stored || !sameJson(withoutPosition(stored), record)) void this.saveRun(record);
    }
    for (const [steerId, steer] of steers) {
      const stored = await this.loads(this.steers.get(steerId), 'steer', steerId);
      if (stored !== false && kept(steer.sessionId, 'steer', steerId) && !sameJson(stored, steer))
        void this.saveSteer(steer);
    }
    for (const [sessionId, entries] of lanes) void this.saveLane(sessionId, entries);
    for (const [sessionId, fingerprints] of grants) void this.saveGrants(sessionId, fingerprints);
    for (const [runId, logged] of events) {
      if (!kept(logged[0]!.sessionId, 'run', runId)) continue;
      const runLog = this.runLog(runId);
      const last = await this.loads(runLog.last(), 'run', runId);
      if (last === false) continue;
      for (const event of logged) if (event.seq > (last?.seq ?? 0)) void this.pendingWrites.track(runLog.append(event));
    }
    return new Set(events.keys());
  }

  /**
   * Puts the store back together after a crash, at open. An event that is in its run's log but
   * not in its session's log gets its session entry (only open runs and runs the journal
   * replayed can have such events), so a session replay holds every event of its runs and
   * numbering continues past them. A run whose end did land but was not yet taken out of
   * open-runs.json is closed.
   */
  private async repairAfterCrash(replayed: ReadonlySet<string>): Promise<void> {
    const bySession = new Map<string, RunEvent[]>();
    const open = new Map((await this.runs.openRecords()).map((record) => [record.runId, record]));
    for (const runId of new Set([...open.keys(), ...replayed])) {
      if (this.quarantine.has('run', runId)) continue;
      const events = await this.loads(this.runLog(runId).readAfter(0), 'run', runId);
      if (events === false) continue;
      for (const event of events) bySession.set(event.sessionId, [...(bySession.get(event.sessionId) ?? []), event]);
      const record = open.get(runId);
      if (record && isTerminalState(record.state) && events.some(isTerminalEvent)) this.runs.close(runId);
    }
    const appended: Promise<void>[] = [];
    for (const [sessionId, events] of bySession) {
      if (this.quarantine.has('session', sessionId)) continue;
      const log = this.sessionLog(sessionId);
      const found = await this.loads(log.last(), 'session', sessionId);
      if (found === false) continue;
      const last = found?.[0] ?? 0;
      const missing = events.filter((e) => e.sessionSeq > last).sort((a, b) => a.sessionSeq - b.sessionSeq);
      for (const event of missing) appended.push(log.append([event.sessionSeq, event.runId, event.seq]));
    }
    await Promise.all(appended);
  }

  // ---------------------------------------------------------------------------------------
  // Events

  appendEvent(event: RunEvent): Promise<void> {
    if (this.closed) return closedError();
    const refused = this.refusal('run', event.runId) ?? this.refusal('session', event.sessionId);
    if (refused) return refused;
    const before = [this.runs.writing(event.runId), this.lanesWrite].filter((p) => p !== undefined);
    const waitFor = before.length > 0 ? Promise.all(before) : undefined;
    // Awaited when the log's write starts, a checkpoint delay later: its failure is that write's.
    waitFor?.catch(() => {});
    const runLog = this.runLog(event.runId);
    const stored = runLog.append(event, waitFor);
    const indexed = this.sessionLog(event.sessionId).append([event.sessionSeq, event.runId, event.seq], stored);
    const terminal = isTerminalEvent(event);
    if (terminal) this.ending.add(event.runId);
    const done = Promise.all([stored, indexed]).then(() => {
      // An ended run is closed once its terminal event is in both logs; its log leaves memory.
      if (!terminal) return;
      this.runs.close(event.runId);
      this.ending.delete(event.runId);
      if (this.runLogs.peek(event.runId) === runLog && runLog.idle) this.runLogs.delete(event.runId);
    });
    void this.pendingWrites.track(done);
    // A log the store cannot read (a damaged file) refuses the append rather than keep it only in the journal.
    const journaled = this.journal.append({ k: 'event', v: event });
    return runLog.loadedSize() !== undefined ? journaled : Promise.all([journaled, runLog.ready]).then(() => {});
  }

  async readEvents(runId: string, afterSeq = 0): Promise<RunEvent[]> {
    this.assertOpen();
    this.quarantine.check('run', runId);
    return this.runLog(runId).readAfter(afterSeq);
  }

  async lastSessionSeq(sessionId: string): Promise<number> {
    this.assertOpen();
    this.quarantine.check('session', sessionId);
    return (await this.sessionLog(sessionId).last())?.[0] ?? 0;
  }

  async readSessionEvents(sessionId: string, afterSessionSeq = 0): Promise<RunEvent[]> {
    this.assertOpen();
    this.quarantine.check('session', sessionId);
    const entries = await this.sessionLog(sessionId).readAfter(afterSessionSeq);
    const events: RunEvent[] = [];
    for (const [sessionSeq, runId, seq] of entries) {
      // A quarantined run's events are left out of its session's replay.
      if (this.quarantine.has('run', runId)) continue;
      const event = await this.runLog(runId).get(seq);
      if (event && event.sessionSeq === sessionSeq) events.push(event);
    }
    return events;
  }

  private runLog(runId: string): SegmentedLog<RunEvent> {
    return this.logIn(this.runLogs, runId, () => ({
      dir: join(this.dir, 'events', idPath(runId)),
      item: StoredEvent,
      keyOf: (event: RunEvent) => event.seq,
      cache: this.eventSegments,
    }));
  }

  private sessionLog(sessionId: string): SegmentedLog<SessionEntry> {
    return this.logIn(this.sessionLogs, sessionId, () => ({
      dir: join(this.dir, 'sessions', idPath(sessionId), 'events'),
      item: StoredSessionEntry,
      keyOf: (entry: SessionEntry) => entry[0],
      cache: this.sessionSegments,
    }));
  }

  private conversationLog(sessionId: string): SegmentedLog<Message> {
    return this.logIn(this.conversations, sessionId, () => ({
      dir: join(this.dir, 'sessions', idPath(sessionId), 'conversation'),
      item: StoredMessage,
      cache: this.messageSegments,
    }));
  }

  private logIn<T>(
    logs: LruMap<string, SegmentedLog<T>>,
    key: string,
    options: () => {
      dir: string;
      item: z.ZodType<T>;
      keyOf?: (item: T) => number;
      cache: LruMap<string, Promise<T[]>>;
    },
  ): SegmentedLog<T> {
    let log = logs.get(key);
    if (!log) {
      log = new SegmentedLog({ ...options(), limits: this.limits, writer: this.writer, onRead: this.countRead });
      logs.set(key, log);
    }
    return log;
  }

  // ---------------------------------------------------------------------------------------
  // Conversations, lanes and grants

  appendMessages(sessionId: string, messages: Message[]): Promise<void> {
    if (this.closed) return closedError();
    const refused = this.refusal('session', sessionId);
    if (refused) return refused;
    const log = this.conversationLog(sessionId);
    // Where the messages go, so a replay after a crash adds each once. A session's appends come
    // one after another (harness/conversation.ts), so a log still loading counts them in order.
    const at = log.loadedSize();
    void this.pendingWrites.track(Promise.all(messages.map((message) => log.append(message))).then(() => {}));
    if (at !== undefined) return this.journal.append({ k: 'messages', s: sessionId, at, v: messages });
    return this.deferredAppends.track(
      log.ready.then(() =>
        this.journal.append({ k: 'messages', s: sessionId, at: log.loadedSize()! - messages.length, v: messages }),
      ),
    );
  }

  async readConversation(sessionId: string): Promise<Message[]> {
    this.assertOpen();
    this.quarantine.check('session', sessionId);
    return this.conversationLog(sessionId).readAfter(0);
  }

  saveLane(sessionId: string, entries: StoredLaneEntry[]): Promise<void> {
    if (this.closed) return closedError();
    if (entries.length === 0) this.lanes.delete(sessionId);
    else
      this.lanes.set(
        sessionId,
        entries.map((entry) => ({ ...entry })),
      );
    const written = this.writer.write(join(this.dir, 'lanes.json'), () => ({ data: { lanes: [...this.lanes] } }));
    this.lanesWrite = written;
    const done = () => {
      if (this.lanesWrite === written) this.lanesWrite = undefined;
    };
    written.then(done, done);
    void this.pendingWrites.track(written);
    return this.journal.append({ k: 'lane', s: sessionId, v: entries });
  }

  async readLanes(): Promise<Record<string, StoredLaneEntry[]>> {
    this.assertOpen();
    return Object.fromEntries(
      [...this.lanes]
        .filter(([sessionId]) => !this.quarantine.has('session', sessionId))
        .map(([sessionId, lane]) => [sessionId, lane.map((entry) => ({ ...entry }))]),
    );
  }

  saveGrants(sessionId: string, fingerprints: string[]): Promise<void> {
    if (this.closed) return closedError();
    this.grants.set(sessionId, [...fingerprints]);
    void this.pendingWrites.track(
      this.writer.write(join(this.dir, 'grants.json'), () => ({ data: { grants: [...this.grants] } })),
    );
    return this.journal.append({ k: 'grants', s: sessionId, v: fingerprints });
  }

  async readGrants(): Promise<Record<string, string[]>> {
    this.assertOpen();
    return Object.fromEntries([...this.grants].map(([sessionId, fingerprints]) => [sessionId, [...fingerprints]]));
  }

  // ---------------------------------------------------------------------------------------
  // Lifecycle

  /** Resolves once the journal holds every change asked for before the call. */
  durable(): Promise<void> {
    return Promise.all([this.journal.durable(), this.deferredAppends.settled()]).then(() => {});
  }

  /** Resolves once everything written so far is in the files too; rejects (`write_failed`) if a retried write still fails. */
  async flush(): Promise<void> {
    await this.writer.hurry(() => this.flushNow());
  }

  private async flushNow(): Promise<void> {
    await this.durable().catch(() => {});
    // What a completed write starts (a run leaving open-runs.json) is started by then.
    await this.pendingWrites.settled().catch(() => {});
    // Appends to a log still being loaded reach the writer once it is loaded.
    const loading = [...this.runLogs.values(), ...this.sessionLogs.values(), ...this.conversations.values()].map(
      (log) => log.ready,
    );
    loading.push(...this.runIndex.loading());
    await Promise.allSettled(loading);
    await this.writer.flush();
    // What was busy when it fell out of use can go now.
    for (const cache of [this.runLogs, this.sessionLogs, this.conversations]) cache.trim();
    this.runIndex.trim();
    this.runs.trim();
    this.steers.trim();
  }

  /** Flushes, then releases the directory; every later call rejects with `store_closed`. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    try {
      await this.flush();
      await this.journal.close();
      await this.writer.close();
    } finally {
      await this.releaseLock();
    }
  }

  /**
   * Whether writes succeed now, and the damage found since open (GET /readyz). While writes
   * fail, a probe write checks for room; once there is, writes are taken again and the files
   * catch up with the journal.
   */
  async health(): Promise<StoreHealth> {
    this.assertOpen();
    if (this.writeFailure() !== undefined && (await this.roomAgain())) {
      this.journal.recovered();
      await this.catchUp();
    }
    const failure = this.writeFailure();
    return {
      writable: failure === undefined,
      ...(failure !== undefined
        ? { problem: `writes fail (${messageOf(failure)}): they are refused until there is room again` }
        : {}),
      damage: [...this.damage.list],
    };
  }

  /** The runs, sessions and steers moved to quarantine (quarantine.ts). */
  quarantined(): QuarantineEntry[] {
    return this.quarantine.list();
  }

  private writeFailure(): unknown {
    return (
      this.journal.failure ??
      this.writer.failure ??
      (this.leftOverSegments.length > 0 ? this.leftOverFailure : undefined)
    );
  }

  private readonly leftOverFailure = new Error(
    'the files do not yet hold what the journal left from before the store opened',
  );

  private async roomAgain(): Promise<boolean> {
    const probe = join(this.dir, '.probe.tmp');
    try {
      await writeFile(probe, Buffer.alloc(PROBE_BYTES), { mode: 0o600 });
      return true;
    } catch {
      return false;
    } finally {
      await rm(probe, { force: true }).catch(() => {});
    }
  }

  /** Redoes the file writes that failed; once the files hold everything, what the journal left at open goes. */
  private async catchUp(): Promise<void> {
    try {
      await this.flush();
      await this.journal.discard(this.leftOverSegments);
      this.leftOverSegments = [];
    } catch {
      // Still no room: the next health() tries again.
    }
  }

  /** The runs index; a damaged one (found while opening) is quarantined and built again from the run files. */
  private async openRunIndex(): Promise<FileRunIndex> {
    const damaged: unknown[] = [];
    const options = {
      dir: this.dir,
      records: this.runs,
      writer: this.writer,
      limits: this.limits,
      openLists: this.options.openLogs ?? 256,
      cachedSegments: this.options.cachedSegments ?? 64,
      onRead: this.countRead,
      onDamaged: (error: unknown) => {
        if (this.opening) damaged.push(error);
        else
          this.damage.report(
            `runs index: ${messageOf(error)}; left out of runs.query pages until the index is rebuilt at the next open`,
          );
      },
    };
    try {
      const index = await FileRunIndex.open(options);
      if (damaged.length === 0) return index;
      await this.writer.flush().catch(() => {});
    } catch (error) {
      if (!isStoreError(error) || error.code !== 'corrupt_file') throw error;
      damaged.push(error);
    }
    for (const error of damaged) {
      const path = isStoreError(error) ? error.details?.path : undefined;
      await this.quarantine.isolate('file', path ? relative(this.dir, path) : 'runs-index', error);
    }
    this.damage.report('runs index: damaged; rebuilt from the run files');
    return FileRunIndex.open({ ...options, rebuild: true });
  }

  /**
   * `load`'s value; or, when it fails on a damaged file while the store opens, false after
   * the file is quarantined as `kind` `id`'s. Any other failure is thrown on.
   */
  private async loads<T>(load: Promise<T>, kind: QuarantineKind, id: string): Promise<T | false> {
    try {
      return await load;
    } catch (error) {
      if (this.quarantine.has(kind, id)) return false;
      if (this.opening && (await this.quarantine.isolate(kind, id, error))) {
        // The log that failed to load would keep answering with that error; the quarantine answers now.
        this.runLogs.delete(id);
        if (kind === 'session') {
          this.sessionLogs.delete(id);
          this.conversations.delete(id);
        }
        return false;
      }
      throw error;
    }
  }

  /** A damaged run or steer file found by openRecords or scan: quarantined while opening, reported later. */
  private async damagedRecord(kind: 'run' | 'steer', id: string | undefined, error: unknown): Promise<void> {
    if (id !== undefined && this.quarantine.has(kind, id)) return;
    const path = isStoreError(error) ? error.details?.path : undefined;
    const owner = id ?? (path ? await idInDamagedFile(path, kind === 'run' ? 'runId' : 'steerId') : undefined);
    if (!this.opening) {
      this.damage.report(`${kind} ${owner ?? '(unknown id)'}: ${messageOf(error)}; left out`);
      return;
    }
    await this.quarantine.isolate(
      owner !== undefined ? kind : 'file',
      owner ?? (path ? relative(this.dir, path) : kind),
      error,
    );
  }

  /** The `corrupt_file` rejection a write for a quarantined run, session or steer gets. */
  private refusal(kind: QuarantineKind, id: string): Promise<never> | undefined {
    if (!this.quarantine.has(kind, id)) return undefined;
    try {
      this.quarantine.check(kind, id);
    } catch (error) {
      return Promise.reject(error);
    }
    return undefined;
  }

  /** Counters for tests and benchmarks. */
  stats(): LowdbStoreStats {
    return {
      journalWrites: this.journal.writes,
      fileWrites: this.writer.fileWrites,
      fileReads: this.fileReads,
      pendingFiles: this.writer.pendingFiles,
      openLogs: this.runLogs.size + this.sessionLogs.size + this.conversations.size,
      openIndexLists: this.runIndex.openLists,
      cachedSegments: this.eventSegments.size + this.sessionSegments.size + this.messageSegments.size,
      cachedRecords: this.runs.cachedCount + this.steers.cachedCount,
    };
  }

  private assertOpen(): void {
    if (this.closed) throw closedStoreError();
  }
}

const JournalChangeShape = z.union([
  z.object({ k: z.literal('run'), v: StoredRecord }),
  z.object({ k: z.literal('steer'), v: StoredSteer }),
  z.object({ k: z.literal('event'), v: StoredEvent }),
  z.object({ k: z.literal('messages'), s: z.string(), at: z.number().int(), v: z.array(StoredMessage) }),
  z.object({ k: z.literal('lane'), s: z.string(), v: z.array(LaneEntry) }),
  z.object({ k: z.literal('grants'), s: z.string(), v: z.array(z.string()) }),
]);

/** A journal line that parses but is not a change the store wrote is damage too: it is not replayed. */
function isJournalChange(value: unknown): value is JournalChange {
  return JournalChangeShape.safeParse(value).success;
}

function describeQuarantined(entry: QuarantineEntry): string {
  const what = entry.kind === 'file' ? `file ${entry.file}` : `${entry.kind} ${entry.id} (file ${entry.file})`;
  return `quarantined ${what}: ${entry.reason}; ${entry.movedTo ? `moved to ${entry.movedTo}` : 'left in place (it could not be moved)'}`;
}

/** The id a damaged record file still names, when its text holds one (a record cut short keeps its first keys). */
async function idInDamagedFile(path: string, key: 'runId' | 'steerId'): Promise<string | undefined> {
  const text = await readFile(path, 'utf8').catch(() => '');
  const match = new RegExp(`"${key}"\\s*:\\s*("(?:[^"\\\\]|\\\\.)*")`).exec(text);
  if (!match) return undefined;
  try {
    const id = JSON.parse(match[1]!) as string;
    // Only the id whose file this is: a damaged file must not quarantine another run.
    return path.endsWith(`${idPath(id)}.json`) ? id : undefined;
  } catch {
    return undefined;
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function withoutPosition({ indexPosition: _position, ...record }: StoredRunRecord): RunRecord {
  return record;
}

function isIdle<T>(log: SegmentedLog<T>): boolean {
  return log.idle;
}

function closedStoreError(): StoreError {
  return new StoreError('store_closed', 'the store is closed; open it again with LowdbStore.open(dir)');
}

function closedError(): Promise<never> {
  return Promise.reject(closedStoreError());
}
