/*
 * The engine's actors in Stately's Inspector (`switchyard serve --stately-inspector ws://…`,
 * README "Stately's Inspector"): the inspection events of the actors asked for (a session, a
 * run, or all), in @statelyai/inspect's format as the package's own createInspector makes it,
 * sent to an inspector server (`createInspectorServer` of `@statelyai/inspect/server`) that
 * relays them to the Inspector in a browser. The package is an optional dependency, loaded
 * only here and only when asked for.
 *
 * Each actor is announced once (`@xstate.actor`) with its machine's real definition and its
 * parent; each step (a transition record, inspection-transitions.ts, so XState 6 reads the
 * same) is an `@xstate.event` with its sender and an `@xstate.snapshot`. The Inspector knows
 * actors by `sessionId`, which XState makes unique only within one actor system (every
 * session and run is a system of its own), so the bridge names them by our actorId
 * ("run:<runId>/act/call-0", inspect-serialize.ts). Contexts and events are capped copies
 * (json-safe.ts) with secrets redacted (approval/redact.ts): the Inspector is someone
 * else's page. Nothing here can slow or fail the engine: the socket buffers a bounded number
 * of events while the server is away (stately-socket.ts) and a fault is reported, not thrown.
 */
import type { AnyActorRef, InspectionEvent, Snapshot } from 'xstate';
import type { StatelyInspectionEvent } from '@statelyai/inspect';
import type { Clock } from '../../core/clock.js';
import { redactValue } from '../../approval/redact.js';
import { actorIdOf, contextCopy, eventCopy, machineIdOf, rootOf, type ActorShape } from './inspect-serialize.js';
import { InspectionTransitions } from './inspection-transitions.js';
import type { GatewayEngine } from '../method-handlers.js';
import { StatelySocket, type StatelySocketStats } from './stately-socket.js';

export interface StatelyBridgeOptions {
  /** The inspector server, e.g. "ws://127.0.0.1:8080". */
  url: string;
  /** Only this session's actors: the session and its runs with theirs. */
  sessionId?: string;
  /** Only this run's actors: the run, its tool batches and tool calls. */
  runId?: string;
  /** Events kept while the server is away. Default 1000. */
  maxBuffered?: number;
  /** Connection changes and faults, one line each; must not throw. */
  log: (level: 'info' | 'warn' | 'error', message: string) => void;
  /** Loads @statelyai/inspect; the default is a dynamic import (tests pass a failing one). */
  load?: () => Promise<StatelyInspect>;
  /** Passed on to the socket (tests shorten them, or run them on a SimulatedClock). */
  firstRetryMs?: number;
  maxRetryMs?: number;
  clock?: Clock;
}

export interface StatelyBridge {
  /** Stops forwarding and closes the socket; nothing is left running. */
  stop(): void;
  stats(): StatelySocketStats;
}

/** The package version this bridge is written against (package.json pins it). */
export const STATELY_INSPECT_VERSION = '0.7.2';

type BridgeEngine = Pick<GatewayEngine, 'inspect' | 'inspectionSnapshot'>;
type StatelyInspect = typeof import('@statelyai/inspect');
type Inspector = ReturnType<StatelyInspect['createInspector']>;
/** An actor as createInspector takes it; the package reads only what StandIn has. */
type InspectedActor = Parameters<Inspector['actor']>[0];

/** What createInspector reads of an actor: its sessionId, id, parent and machine definition. */
interface StandIn {
  sessionId: string;
  id: string;
  _parent?: StandIn;
  logic?: { config: unknown };
}

interface SnapshotShape {
  status?: string;
  value?: unknown;
  context?: unknown;
  output?: unknown;
  error?: unknown;
}

/** Where a root actor comes from: the input XState keeps in its options. */
interface RootShape {
  options?: { input?: { sessionId?: unknown } };
}

/**
 * Starts forwarding; rejects with a message that says what to do if @statelyai/inspect is not
 * installed.
 * @example
 *   const bridge = await startStatelyBridge(engine, { url: 'ws://127.0.0.1:8080', log: (level, line) => logger[level](line) });
 *   // … at shutdown:
 *   bridge.stop();
 */
export async function startStatelyBridge(engine: BridgeEngine, options: StatelyBridgeOptions): Promise<StatelyBridge> {
  let inspect: StatelyInspect;
  try {
    inspect = await (options.load ?? (() => import('@statelyai/inspect')))();
  } catch (error) {
    throw new Error(
      `the Stately inspector needs the optional package @statelyai/inspect, which could not be loaded ` +
        `(${(error as Error).message}); install it with \`npm install ` +
        `@statelyai/inspect@${STATELY_INSPECT_VERSION}\` or leave --stately-inspector / [inspector] ` +
        `stately_url unset`,
    );
  }
  const socket = new StatelySocket({
    url: options.url,
    maxBuffered: options.maxBuffered ?? 1000,
    log: options.log,
    ...(options.firstRetryMs !== undefined ? { firstRetryMs: options.firstRetryMs } : {}),
    ...(options.maxRetryMs !== undefined ? { maxRetryMs: options.maxRetryMs } : {}),
    ...(options.clock !== undefined ? { clock: options.clock } : {}),
  });
  const forwarder = new StatelyForwarder(inspect.createInspector, socket, options);
  socket.start();
  for (const event of engine.inspectionSnapshot())
    if (event.type === '@xstate.snapshot') forwarder.announce(event.actorRef, event.snapshot);
  const detach = engine.inspect((event) => forwarder.forward(event));
  return {
    stop: () => {
      detach();
      socket.stop();
    },
    stats: () => socket.stats(),
  };
}

class StatelyForwarder {
  private readonly inspector: Inspector;
  private readonly steps = new InspectionTransitions();
  private readonly standIns = new WeakMap<object, StandIn>();
  private readonly announced = new WeakSet<object>();
  /** root actor → whether its actors are forwarded. */
  private readonly wantedRoots = new WeakMap<object, boolean>();
  /** The root of the actor of the event being made: the package leaves `rootId` to us. */
  private rootId = '';
  private faults = 0;

  constructor(
    createInspector: StatelyInspect['createInspector'],
    socket: StatelySocket,
    private readonly options: StatelyBridgeOptions,
  ) {
    this.inspector = createInspector(
      { send: (event: StatelyInspectionEvent) => socket.send(event) },
      { serialize: (event) => ({ ...event, rootId: this.rootId }) },
    );
  }

  forward(event: InspectionEvent): void {
    try {
      if (!this.wanted(event.actorRef)) return;
      if (event.type === '@xstate.actor') {
        this.announce(event.actorRef, undefined);
        return;
      }
      const record = this.steps.observe(event);
      if (!record) return;
      const actor = record.actorRef;
      if (!this.announced.has(actor)) this.announce(actor, undefined);
      const standIn = this.standIn(actor);
      const safeEvent = redactValue(eventCopy(record.event)) as { type: string };
      this.rootId = this.rootIdOf(actor);
      this.inspector.event(standIn, safeEvent, record.sourceRef ? { source: this.standIn(record.sourceRef) } : {});
      this.inspector.snapshot(standIn, safeSnapshot(record.snapshot), { event: safeEvent });
    } catch (error) {
      // The first fault is worth a line; the engine never hears of any.
      if (this.faults++ === 0)
        this.options.log(
          'error',
          `Stately inspector: could not forward an inspection event (${String(error)}); later ones are dropped silently if they fail too`,
        );
    }
  }

  /** `@xstate.actor` with the machine's definition, the parent, and the snapshot if there is one yet. */
  announce(actorRef: unknown, snapshot: unknown): void {
    const actor = actorRef as AnyActorRef;
    if (!this.wanted(actor)) return;
    this.announced.add(actor);
    this.rootId = this.rootIdOf(actor);
    this.inspector.actor(this.standIn(actor), snapshot === undefined ? { status: 'active' } : safeSnapshot(snapshot));
  }

  private wanted(actorRef: unknown): boolean {
    const { sessionId, runId } = this.options;
    if (sessionId === undefined && runId === undefined) return true;
    const root = rootOf(actorRef as ActorShape);
    let wanted = this.wantedRoots.get(root);
    if (wanted === undefined) {
      const rootId = actorIdOf(root);
      if (runId !== undefined) wanted = rootId === `run:${runId}`;
      else
        wanted =
          rootId === `session:${sessionId}` ||
          (rootId.startsWith('run:') && (root as RootShape).options?.input?.sessionId === sessionId);
      this.wantedRoots.set(root, wanted);
    }
    return wanted;
  }

  private rootIdOf(actor: unknown): string {
    return actorIdOf(rootOf(actor as ActorShape));
  }

  private standIn(actorRef: unknown): InspectedActor {
    return this.standInOf(actorRef) as unknown as InspectedActor;
  }

  private standInOf(actorRef: unknown): StandIn {
    const actor = actorRef as ActorShape & { logic?: { config?: unknown } };
    let standIn = this.standIns.get(actor);
    if (standIn === undefined) {
      const actorId = actorIdOf(actor);
      standIn = { sessionId: actorId, id: actor.id ?? actorId };
      if (actor._parent) standIn._parent = this.standInOf(actor._parent);
      // A machine's definition: createInspector sends it with the actor; promise actors have none.
      if (machineIdOf(actor) !== undefined) standIn.logic = { config: actor.logic!.config };
      this.standIns.set(actor, standIn);
    }
    return standIn;
  }
}

/** Status, state value, and context, output and error as capped, redacted copies. */
function safeSnapshot(snapshot: unknown): {
  status: Snapshot<unknown>['status'];
  value?: unknown;
  context?: unknown;
  output?: unknown;
} {
  const s = snapshot as SnapshotShape;
  const safe: {
    status: Snapshot<unknown>['status'];
    value?: unknown;
    context?: unknown;
    output?: unknown;
    error?: unknown;
  } = {
    status: (typeof s.status === 'string' ? s.status : 'active') as Snapshot<unknown>['status'],
  };
  if (s.value !== undefined) safe.value = s.value;
  if (s.context !== undefined) safe.context = redactValue(contextCopy(s.context));
  if (s.output !== undefined) safe.output = redactValue(contextCopy(s.output));
  if (s.error !== undefined) safe.error = redactValue(contextCopy(s.error));
  return safe;
}
