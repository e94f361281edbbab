/*
 * XState inspection events made JSON-safe for the wire (`inspect` notifications) and for
 * the inspector page. The shape, one object per InspectionEvent:
 *
 *   {
 *     type:      '@xstate.actor' | '@xstate.event' | '@xstate.snapshot'
 *              | '@xstate.microstep' | '@xstate.transition' | '@xstate.action',
 *     actorId:   string,   // unique in the engine: the path of actor ids from the root,
 *                          //   e.g. "limiter", "session:alice", "run:<runId>",
 *                          //   "run:<runId>/act", "run:<runId>/act/<tool-call child id>"
 *     rootId:    string,   // the root's actorId ("limiter" | "session:…" | "run:…")
 *     parentId?: string,   // the parent's actorId (absent for roots)
 *     sessionId: string,   // XState's actorRef.sessionId (unique only within its root)
 *     machineId?: string,  // which statechart: 'limiter' | 'session' | 'run' | 'act'
 *                          //   | 'toolCall'; absent for a chart's async work shown as a
 *                          //   child (".../turn:<n>", ".../call-<i>/approval",
 *                          //   ".../call-<i>/exec")
 *     sourceId?: string,   // '@xstate.event', '@xstate.transition': the sending actor's
 *                          //   actorId, if an actor sent the event
 *     event?:    { type: string, ... },   // event / snapshot / microstep / transition
 *     snapshot?: { status: 'active' | 'done' | 'error' | 'stopped',
 *                  value?: StateValue,     // machines only: 'queued' | { running: 'thinking' } …
 *                  context?: {…},          // the whole context (size-capped, JSON-safe), or
 *                  contextChanges?: {…},   //   only the keys that changed since the actor's
 *                  contextRemoved?: string[], //   last snapshot on this stream (see below)
 *                  output?: unknown, error?: unknown },
 *                          // a '@xstate.microstep' has status and value only
 *     transitions?: { source: string, targets: string[], eventType: string }[],
 *                          // '@xstate.microstep', '@xstate.transition': state node ids,
 *                          //   e.g. "run.live.running"
 *     action?:   { type: string, params?: unknown },   // '@xstate.action'
 *     at:        number,   // Date.now() when the gateway saw it
 *   }
 *
 * Everything nested is capped (depth, string length, items), so one event stays small;
 * actor references inside a context or event become { "@actor": actorId }. A subscription
 * starts with one '@xstate.snapshot' per live actor as it is, whose event is
 * { type: 'inspect.current' } (the engine's inspectionSnapshot()) and whose context is
 * whole, then the live events. An actor's context comes whole with its first snapshot on the
 * stream and then as deltas: `contextChanges` merged into what the reader holds, the keys in
 * `contextRemoved` deleted from it — most steps change one or two keys of ten.
 *
 * Each step of an actor comes once more, whole, as one '@xstate.transition' record right after
 * the '@xstate.snapshot' that ends it: the event, its sender (sourceId), the actor that took it
 * (actorId), the state-node transitions of its microsteps and the same snapshot. XState 6
 * reports only '@xstate.actor' and '@xstate.transition'; a reader of these records (the page,
 * the Stately bridge) reads either version (inspection-transitions.ts). The frames are built
 * in inspection-frames.ts; this file says what is in them and makes their parts.
 */
import type { InspectionEvent } from 'xstate';
import { jsonSafe, jsonSafeText, type JsonSafeLimits } from '../json-safe.js';

export type InspectionEventType = InspectionEvent['type'];

export interface SerializedSnapshot {
  status: string;
  value?: unknown;
  /** The whole context: replaces what the reader held for this actor. */
  context?: Record<string, unknown>;
  /** The keys whose values changed since the actor's last snapshot on this stream, merged into it. */
  contextChanges?: Record<string, unknown>;
  /** The keys that have no value any more since the actor's last snapshot on this stream. */
  contextRemoved?: string[];
  output?: unknown;
  error?: unknown;
}

export interface SerializedInspectionEvent {
  type: InspectionEventType;
  actorId: string;
  rootId: string;
  parentId?: string;
  sessionId: string;
  machineId?: string;
  sourceId?: string;
  event?: { type: string; [key: string]: unknown };
  snapshot?: SerializedSnapshot;
  transitions?: { source: string; targets: string[]; eventType: string }[];
  action?: { type: string; params?: unknown };
  at: number;
}

/** What an actor ref is at run time (ActorRefLike in XState's types hides these members). */
export interface ActorShape {
  id?: string;
  sessionId: string;
  _parent?: ActorShape;
  logic?: { id?: unknown; root?: unknown };
}

const EVENT_LIMITS: JsonSafeLimits = { depth: 4, items: 20, keys: 30, chars: 500 };
const CONTEXT_LIMITS: JsonSafeLimits = { depth: 3, items: 10, keys: 20, chars: 200 };
/** One value of a context, written on its own: the context's limits one level down. */
const CONTEXT_VALUE_LIMITS: JsonSafeLimits = { ...CONTEXT_LIMITS, depth: CONTEXT_LIMITS.depth - 1 };
/** Keys of a context kept in one snapshot. */
export const CONTEXT_KEYS = CONTEXT_LIMITS.keys;

const actorIds = new WeakMap<object, string>();

export function actorIdOf(ref: unknown): string {
  const actor = ref as ActorShape;
  const cached = actorIds.get(actor);
  if (cached !== undefined) return cached;
  const own = typeof actor.id === 'string' && actor.id !== '' ? actor.id : actor.sessionId;
  const id = actor._parent ? `${actorIdOf(actor._parent)}/${own}` : own;
  actorIds.set(actor, id);
  return id;
}

function isActorRef(value: object): boolean {
  const v = value as { send?: unknown; sessionId?: unknown };
  return typeof v.send === 'function' && typeof v.sessionId === 'string';
}

/** Actor references in contexts and events become { "@actor": actorId }. */
const actorRefs = (value: object) => (isActorRef(value) ? { '@actor': actorIdOf(value) } : undefined);

export function rootOf(ref: ActorShape): ActorShape {
  let root = ref;
  while (root._parent) root = root._parent;
  return root;
}

export function machineIdOf(ref: ActorShape): string | undefined {
  const logic = ref.logic;
  // A state machine has a root state node; promise and callback logic do not.
  return logic && logic.root !== undefined && typeof logic.id === 'string' ? logic.id : undefined;
}

/** An XState event as JSON: a capped copy whose `type` is the event's own, whole. */
export function eventText(event: { type: string }): string {
  const plain =
    typeof event.type === 'string' &&
    event.type.length <= EVENT_LIMITS.chars &&
    Object.getPrototypeOf(event) === Object.prototype;
  if (plain) return jsonSafeText(event, EVENT_LIMITS, actorRefs)!;
  const safe = JSON.parse(jsonSafeText(event, EVENT_LIMITS, actorRefs) ?? 'null') as unknown;
  const rest = typeof safe === 'object' && safe !== null && !Array.isArray(safe) ? safe : {};
  return JSON.stringify({ ...rest, type: String(event.type) });
}

/** An action's params, an event's payload: capped like an event. */
export function payloadText(value: unknown): string {
  return jsonSafeText(value, EVENT_LIMITS, actorRefs) ?? 'null';
}

/** One value of a context as JSON, or undefined for what JSON has no value for (undefined, a function). */
export function contextValueText(value: unknown): string | undefined {
  return jsonSafeText(value, CONTEXT_VALUE_LIMITS, actorRefs);
}

/** A snapshot's output or error as JSON: capped like a context. */
export function outcomeText(value: unknown): string {
  return jsonSafeText(value, CONTEXT_LIMITS, actorRefs) ?? 'null';
}

/** An XState event as a JSON-safe object capped like eventText's, its `type` whole. */
export function eventCopy(event: { type: string }): { type: string; [key: string]: unknown } {
  const safe = jsonSafe(event, EVENT_LIMITS, actorRefs);
  const rest = typeof safe === 'object' && safe !== null && !Array.isArray(safe) ? safe : {};
  return { ...rest, type: String(event.type) };
}

/** A context, an output or an error as a JSON-safe object capped like a whole context. */
export function contextCopy(value: unknown): unknown {
  return jsonSafe(value, CONTEXT_LIMITS, actorRefs);
}
