/*
 * One gateway process of a cluster on one Redis (README, "Several gateway processes";
 * docs/cluster.md): an Engine on the shared RedisStore, wrapped so that any request for any
 * session can arrive here. A submit, cancel or session.stop runs where the session is owned
 * (session-router.ts); waits, histories and subscriptions read the logs in Redis, wherever
 * the run executes; approvals, snapshots and config changes reach every process. The engine
 * sees the cluster only through its SessionOwnership port: leases that fence its writes, a
 * limiter in Redis, and where delegated runs go.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Redis } from 'ioredis';
import type { Config, PartialConfig } from '../config/index.js';
import type { ApprovalDecision, ApprovalNotice, ActionSummary } from '../approval/index.js';
import {
  createEngine,
  EngineError,
  isEngineError,
  type Engine,
  type EngineOptions,
  type EngineSnapshot,
  type EventStream,
  type EventStreamFilter,
  type RunEvent,
  type RunEventOf,
  type RunRequest,
  type RunResult,
  type RunStatus,
  type SessionOwnership,
  type SubmitResult,
  type WaitOptions,
} from '../engine/index.js';
import type { LaneChangeResult, LaneListing } from '../core/lane.js';
import { isTerminalState } from '../core/run-status.js';
import { runOfSteer } from '../core/steer.js';
import type { Store } from '../store/index.js';
import { isStoreError } from '../store/store-error.js';
import { connectRedis, redactedUrl } from '../store/redis-client.js';
import { RedisStore } from '../store/redis-store.js';
import { ClusterConfig } from './cluster-config.js';
import { openClusterEvents } from './cluster-events.js';
import { ClusterKeys } from './cluster-keys.js';
import { ClusterMembers, type MemberInfo } from './cluster-members.js';
import { waitInCluster } from './cluster-wait.js';
import { LeaseKeeper } from './lease-keeper.js';
import { NodeInbox } from './node-inbox.js';
import { RedisLimiter } from './redis-limiter.js';
import { SessionLeases } from './session-leases.js';
import { SessionRouter } from './session-router.js';
import { StreamFollower } from './stream-follower.js';

export interface ClusterNodeOptions extends Omit<EngineOptions, 'config' | 'store' | 'ownership'> {
  /** The whole config; [store] kind must be "redis". */
  config: Config;
  /** Wraps the store the engine writes through (telemetry times it); the cluster itself uses the store as is. */
  instrumentStore?: (store: Store) => Store;
  /** Lines an operator wants to see: takeovers, lost sessions, Redis outages. Default: stderr. */
  log?: (line: string) => void;
}

/** The reason a run of a session this process lost ends with here (its real end is the new owner's). */
const DROPPED = 'owner_lost';

interface Parts {
  client: Redis;
  store: RedisStore;
  keys: ClusterKeys;
  leases: SessionLeases;
  follower: StreamFollower;
  inbox: NodeInbox;
  members: ClusterMembers;
  router: SessionRouter;
  keeper: LeaseKeeper;
  clusterConfig: ClusterConfig;
  limiter: () => RedisLimiter | undefined;
  leaseMs: number;
  log: (line: string) => void;
  onError: (error: unknown) => void;
}

export class ClusterNode {
  private closing: Promise<void> | undefined;

  private constructor(
    readonly nodeId: string,
    readonly engine: Engine,
    private readonly parts: Parts,
  ) {}

  /** The Redis store the engine and the cluster share. */
  get store(): RedisStore {
    return this.parts.store;
  }

  /** Connects to Redis, starts the engine, joins the cluster and takes over the sessions nobody owns. */
  static async start(options: ClusterNodeOptions): Promise<ClusterNode> {
    const { config, log: logOption, instrumentStore, ...engineOptions } = options;
    if (config.store.kind !== 'redis')
      throw new EngineError(
        'invalid_config',
        `a cluster keeps its state in Redis: set [store] kind = "redis" (it is "${config.store.kind}")`,
      );
    const nodeId = config.cluster.node_id ?? `${hostname()}:${process.pid}`;
    const leaseMs = config.cluster.lease_seconds * 1000;
    const log = logOption ?? ((line: string) => process.stderr.write(`[switchyard ${nodeId}] ${line}\n`));
    const url = config.store.url;
    const connection = await connectRedis(url, {
      name: `switchyard-${nodeId}`,
      onConnectionLost: (error) =>
        log(`lost the connection to Redis at ${redactedUrl(url)} (${error.message}); writes wait for it`),
    });
    const keys = new ClusterKeys(config.store.key_prefix);
    let leases!: SessionLeases;
    const store = await RedisStore.open({
      client: connection,
      keyPrefix: config.store.key_prefix,
      fencing: { tokenOf: (sessionId) => leases.tokenOf(sessionId) },
    });
    // The ordering rule (src/store/fenced-write.ts): every command of the cluster's parts goes
    // through the store's ordered view, so a lease release, a permit call or a message to another
    // process always reaches Redis after the writes this process asked for before it.
    const client = store.client;
    leases = new SessionLeases({ client, keys, nodeId, leaseMs });
    let node: ClusterNode | undefined;
    let limiter: RedisLimiter | undefined;
    let refused = 0;
    const reportError =
      engineOptions.onError ??
      ((error: unknown) => log(`error: ${error instanceof Error ? error.message : String(error)}`));
    const onError = (error: unknown) => {
      // A refused write means a lease was lost: look at once, and say so only now and then.
      if (isStoreError(error) && error.code === 'fenced') {
        if (refused++ % 100 === 0) log(`a write was refused (${refused} so far): ${error.message}`);
        node?.parts.keeper.soon();
        return;
      }
      reportError(error);
    };
    const follower = new StreamFollower(url, client, onError);
    const inbox = new NodeInbox(client, follower, keys, nodeId, onError);
    const members = new ClusterMembers(client, keys, nodeId, leaseMs);
    const clusterConfig = new ClusterConfig(client, keys);
    const lost = (sessionId: string) => {
      leases.forget(sessionId);
      node?.engine.handover.drop(sessionId, DROPPED);
      log(`lost session ${sessionId}: another process owns it now`);
    };
    const ownership: SessionOwnership = {
      nodeId,
      limiter: (handlers, limits, sessionOf) =>
        (limiter = new RedisLimiter({
          client,
          keys,
          nodeId,
          handlers,
          limits,
          sessionOf,
          tokenOf: (sessionId) => leases.tokenOf(sessionId),
          tellGranted: (to, runId) => inbox.tell(to, 'granted', { runId }),
          onFenced: lost,
          onError,
        })),
      mayAct: (sessionId) => leases.mayAct(sessionId),
      delegate: async (request) => node!.wait((await node!.submit(request)).runId),
    };
    const engine = await createEngine({
      ...engineOptions,
      config,
      store: instrumentStore ? instrumentStore(store) : store,
      ownership,
      onError,
    });
    const router = new SessionRouter({
      leases,
      engine: () => engine,
      inbox,
      leaseMs,
      log,
      adopted: async (sessionId, token) => limiter?.releaseSession(sessionId, token),
    });
    const keeper = new LeaseKeeper({
      leases,
      router,
      engine: () => engine,
      store,
      members,
      limiter: () => limiter,
      config: clusterConfig,
      leaseMs,
      lost,
      onError,
      applyConfig: (partial) => engine.reconfigure(partial),
    });
    node = new ClusterNode(nodeId, engine, {
      client,
      store,
      keys,
      leases,
      follower,
      inbox,
      members,
      router,
      keeper,
      clusterConfig,
      limiter: () => limiter,
      leaseMs,
      log,
      onError,
    });
    node.handleInbox();
    await inbox.start();
    await keeper.start();
    log(`joined the cluster on ${redactedUrl(url)} (keys ${config.store.key_prefix}*, lease ${leaseMs} ms)`);
    return node;
  }

  /** Says where this process's gateway listens (other processes and operators read it from Redis). */
  announce(info: Partial<MemberInfo>): Promise<void> {
    return this.parts.members.announce(info);
  }

  async submit(raw: RunRequest): Promise<SubmitResult> {
    if (typeof raw?.sessionId !== 'string') return this.engine.submit(raw);
    // An id of its own, so that asking the owner again after a timeout cannot admit the message twice.
    const generated = raw.runId === undefined;
    const request = generated ? { ...raw, runId: randomUUID() } : raw;
    try {
      return await this.parts.router.route(request.sessionId, () => this.engine.submit(request), 'submit', request);
    } catch (error) {
      if (generated && isEngineError(error) && error.code === 'duplicate_run_id')
        return this.admittedAlready(request.runId!, request.sessionId);
      throw error;
    }
  }

  async wait(runId: string, options: WaitOptions = {}): Promise<RunResult> {
    if (this.engine.status(runId)) {
      const result = await this.engine.wait(runId, options);
      if (result.reason !== DROPPED) return result;
    }
    return waitInCluster(this.parts.store, this.parts.follower, runId, options);
  }

  events(filter: EventStreamFilter = {}): EventStream {
    const { client, follower, keys, onError } = this.parts;
    return openClusterEvents({ client, follower, keys, onError, local: () => this.engine.events({}) }, filter);
  }

  history(runId: string): Promise<RunEvent[]> {
    return this.engine.history(runId);
  }

  async cancel(runId: string, reason?: string): Promise<boolean> {
    const record = this.engine.status(runId) ?? (await this.parts.store.getRun(runId));
    if (!record || isTerminalState(record.state)) return false;
    const { sessionId } = record;
    return this.parts.router.route(sessionId, () => this.engine.cancel(runId, reason), 'cancel', {
      sessionId,
      runId,
      reason,
    });
  }

  stopSession(sessionId: string): Promise<{ cancelled?: string; purged: number }> {
    return this.parts.router.route(sessionId, () => this.engine.stopSession(sessionId), 'stop', { sessionId });
  }

  status(runId: string): RunStatus | undefined {
    return this.engine.status(runId);
  }

  /** The session's lane, at the process that owns the session. */
  lane(sessionId: string): Promise<LaneListing> {
    return this.parts.router.route(sessionId, async () => this.engine.lane(sessionId), 'lane', {
      sessionId,
      op: 'list',
    });
  }

  withdraw(runId: string): Promise<LaneChangeResult> {
    return this.laneOperation(runId, 'withdraw');
  }

  moveInLane(runId: string, position: number): Promise<LaneChangeResult> {
    return this.laneOperation(runId, 'move', position);
  }

  promoteToSteer(runId: string): Promise<LaneChangeResult> {
    return this.laneOperation(runId, 'promote');
  }

  editWaiting(runId: string, patch: { input: string }): Promise<LaneChangeResult> {
    return this.laneOperation(runId, 'edit', patch);
  }

  /** A lane operation runs where the message's session is owned (its owner's session chart decides). */
  private async laneOperation(runId: string, op: LaneOp, arg?: unknown): Promise<LaneChangeResult> {
    const record = this.engine.status(runId) ?? (await this.parts.store.getRun(runId));
    if (!record) throw new EngineError('not_found', `no message "${runId}"`, { runId });
    const { sessionId } = record;
    return this.parts.router.route(sessionId, () => applyLaneOperation(this.engine, op, runId, arg), 'lane', {
      sessionId,
      op,
      runId,
      arg,
    });
  }

  getRun(runId: string): Promise<RunStatus | undefined> {
    return this.engine.getRun(runId);
  }

  /** A page of the runs of every process: the index is in Redis. */
  queryRuns(query: Parameters<Engine['queryRuns']>[0]): ReturnType<Engine['queryRuns']> {
    return this.engine.queryRuns(query);
  }

  /** The live actors of this process (the inspector shows one process). */
  inspect(listener: Parameters<Engine['inspect']>[0]): () => void {
    return this.engine.inspect(listener);
  }

  inspectionSnapshot(): ReturnType<Engine['inspectionSnapshot']> {
    return this.engine.inspectionSnapshot();
  }

  /** Applies the change here, stores it as the cluster's, and tells every other process to apply it. */
  async reconfigure(partial: PartialConfig): Promise<{ applied: string[]; restartRequired: string[] }> {
    const result = this.engine.reconfigure(partial);
    await this.parts.clusterConfig.publish(this.engine.currentConfig());
    for (const node of await this.otherNodes()) this.parts.inbox.tell(node, 'config', {});
    return result;
  }

  /**
   * Calls `listener` for each approval raised on any process (read off the cluster's all-runs
   * feed, as events.subscribe does); returns the unsubscribe function.
   */
  onApprovalRequested(listener: (request: ApprovalNotice) => void): () => void {
    const stream = this.events({});
    const forward = async () => {
      for await (const event of stream) {
        if (event.type !== 'approval.requested') continue;
        const { approvalId, runId, sessionId, callId, action } = event as RunEventOf<'approval.requested'>;
        try {
          listener({ approvalId, runId, sessionId, callId, action: action as ActionSummary });
        } catch (error) {
          this.parts.onError(error);
        }
      }
    };
    forward().catch(this.parts.onError);
    return () => stream.close();
  }

  /** Answers an approval raised on any process: here when it is this one's, otherwise where it is. */
  async respondApproval(approvalId: string, decision: ApprovalDecision): Promise<boolean> {
    if (this.engine.respondApproval(approvalId, decision)) return true;
    const answers = await Promise.allSettled(
      (await this.otherNodes()).map((node) =>
        this.parts.inbox.request<boolean>(node, 'approval', { approvalId, decision }, this.parts.leaseMs),
      ),
    );
    return answers.some((a) => a.status === 'fulfilled' && a.value === true);
  }

  /** Cluster-wide: the permits in Redis, and every live process's running runs and sessions. */
  async snapshot(): Promise<EngineSnapshot> {
    const { limiter, inbox, leaseMs } = this.parts;
    const figures = (await limiter()?.poll()) ?? this.engine.snapshot();
    const others = await Promise.allSettled(
      (await this.otherNodes()).map((node) => inbox.request<EngineSnapshot>(node, 'snapshot', {}, leaseMs)),
    );
    const all = [this.engine.snapshot(), ...others.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []))];
    return {
      global: figures.global,
      perAgent: figures.perAgent,
      waiting: figures.waiting,
      running: all.flatMap((s) => s.running),
      sessions: all.flatMap((s) => s.sessions),
    };
  }

  /** Leaves the cluster: runs here end as the engine's close ends them, and queued messages go to the others. */
  close(): Promise<void> {
    return (this.closing ??= this.shutdown());
  }

  private async shutdown(): Promise<void> {
    const { keeper, leases, members, inbox, follower, client, onError } = this.parts;
    await keeper.stop();
    await this.engine.close();
    await Promise.all(leases.sessions().map((sessionId) => leases.release(sessionId).catch(onError)));
    await members.leave().catch(onError);
    inbox.stop();
    await follower.close();
    await client.quit().catch(() => client.disconnect());
  }

  private handleInbox(): void {
    const { inbox, router, keeper, limiter } = this.parts;
    const engine = this.engine;
    inbox.handle('submit', async (request) => {
      try {
        return await router.asOwner((request as RunRequest).sessionId, () => engine.submit(request as RunRequest));
      } catch (error) {
        // Shutting down, this process lets its sessions go soon: the asker waits for that and takes the session.
        if (isEngineError(error) && error.code === 'closed')
          throw new EngineError('node_unavailable', `process ${this.nodeId} is shutting down`);
        throw error;
      }
    });
    inbox.handle('cancel', (params) => {
      const { sessionId, runId, reason } = params as { sessionId: string; runId: string; reason?: string };
      return router.asOwner(sessionId, () => engine.cancel(runId, reason));
    });
    inbox.handle('lane', (params) => {
      const { sessionId, op, runId, arg } = params as {
        sessionId: string;
        op: LaneOp | 'list';
        runId: string;
        arg?: unknown;
      };
      return router.asOwner(sessionId, async () =>
        op === 'list' ? engine.lane(sessionId) : applyLaneOperation(engine, op, runId, arg),
      );
    });
    inbox.handle('stop', (params) => {
      const { sessionId } = params as { sessionId: string };
      return router.asOwner(sessionId, () => engine.stopSession(sessionId));
    });
    inbox.handle('approval', (params) => {
      const { approvalId, decision } = params as { approvalId: string; decision: ApprovalDecision };
      return engine.respondApproval(approvalId, decision);
    });
    inbox.handle('snapshot', () => engine.snapshot());
    inbox.handle('config', () => keeper.soon());
    inbox.handle('granted', (params) => limiter()?.onGranted((params as { runId: string }).runId));
  }

  private async otherNodes(): Promise<string[]> {
    return (await this.parts.members.live()).filter((node) => node !== this.nodeId);
  }

  /** A forwarded submit that was admitted although its answer was lost: what the store says of it. */
  private async admittedAlready(runId: string, sessionId: string): Promise<SubmitResult> {
    const record = await this.parts.store.getRun(runId);
    if (record)
      return record.state === 'queued'
        ? { runId, sessionId, outcome: 'queued', position: 1 }
        : { runId, sessionId, outcome: 'started' };
    const steer = await this.parts.store.getSteer(runId);
    if (steer) return { runId, sessionId, outcome: 'steered', intoRunId: runOfSteer(steer) };
    throw new EngineError('store_failed', `run "${runId}" was reported as taken but is not stored; submit it again`, {
      runId,
    });
  }
}

type LaneOp = 'withdraw' | 'move' | 'promote' | 'edit';

function applyLaneOperation(engine: Engine, op: LaneOp, runId: string, arg: unknown): Promise<LaneChangeResult> {
  if (op === 'move') return engine.moveInLane(runId, arg as number);
  if (op === 'promote') return engine.promoteToSteer(runId);
  if (op === 'edit') return engine.editWaiting(runId, arg as { input: string });
  return engine.withdraw(runId);
}
