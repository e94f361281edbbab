/*
 * XState inspection events made JSON-safe for the wire (`inspect` notifications) and for
 * the inspector page. The shape, one object per InspectionEvent:
 *
 *   {
 *     type:      '@xstate.actor' | '@xstate.event' | '@xstate.snapshot'
 *              | '@xstate.microstep' | '@xstate.transition' | '@xstate.action',
 *     actorId:   string,   // unique in the engine: the path of actor ids from the root,
 *                          //   e.g. "supervisor", "session:alice", "run:<runId>",
 *                          //   "run:<runId>/act", "run:<runId>/act/<tool-call child id>"
 *     rootId:    string,   // the root's actorId ("supervisor" | "session:…" | "run:…")
 *     parentId?: string,   // the parent's actorId (absent for roots)
 *     sessionId: string,   // XState's actorRef.sessionId (unique only within its root)
 *     machineId?: string,  // which statechart: 'supervisor' | 'session' | 'run' | 'act'
 *                          //   | 'toolCall'; absent for promise actors (model turn, tool)
 *     sourceId?: string,   // '@xstate.event': the sending actor's actorId, if an actor sent it
 *     event?:    { type: string, ... },   // event / snapshot / microstep / transition
 *     snapshot?: { status: 'active' | 'done' | 'error' | 'stopped',
 *                  value?: StateValue,     // machines only: 'queued' | { running: 'thinking' } …
 *                  context?: {…},          // a size-capped JSON-safe copy of the context
 *                  output?: unknown, error?: unknown },
 *     transitions?: { source: string, targets: string[], eventType: string }[],
 *                          // '@xstate.microstep': state node ids, e.g. "run.live.running"
 *     action?:   { type: string, params?: unknown },   // '@xstate.action'
 *     at:        number,   // Date.now() when the gateway saw it
 *   }
 *
 * Everything nested is capped (depth, string length, items), so one event stays small;
 * actor references inside a context or event become { "@actor": actorId }. A subscription
 * starts with one '@xstate.snapshot' per live actor as it is, whose event is
 * { type: 'inspect.current' } (the engine's inspectionSnapshot()), then the live events.
 */
import type { InspectionEvent } from 'xstate';
import { jsonSafe, type JsonSafeLimits } from './json-safe.js';

export type InspectionEventType = InspectionEvent['type'];

export interface SerializedSnapshot {
  status: string;
  value?: unknown;
  context?: Record<string, unknown>;
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
interface ActorShape {
  id?: string;
  sessionId: string;
  _parent?: ActorShape;
  logic?: { id?: unknown; root?: unknown };
}

const EVENT_LIMITS: JsonSafeLimits = { depth: 4, items: 20, keys: 30, chars: 500 };
const CONTEXT_LIMITS: JsonSafeLimits = { depth: 3, items: 10, keys: 20, chars: 200 };

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

function rootOf(ref: ActorShape): ActorShape {
  let root = ref;
  while (root._parent) root = root._parent;
  return root;
}

function machineIdOf(ref: ActorShape): string | undefined {
  const logic = ref.logic;
  // A state machine has a root state node; promise and callback logic do not.
  return logic && logic.root !== undefined && typeof logic.id === 'string' ? logic.id : undefined;
}

export function serializeInspectionEvent(event: InspectionEvent, at = Date.now()): SerializedInspectionEvent {
  const ref = event.actorRef as unknown as ActorShape;
  const out: SerializedInspectionEvent = {
    type: event.type,
    actorId: actorIdOf(ref),
    rootId: actorIdOf(rootOf(ref)),
    sessionId: ref.sessionId,
    at,
  };
  if (ref._parent) out.parentId = actorIdOf(ref._parent);
  const machineId = machineIdOf(ref);
  if (machineId !== undefined) out.machineId = machineId;
  switch (event.type) {
    case '@xstate.event':
      out.event = eventOf(event.event);
      if (event.sourceRef) out.sourceId = actorIdOf(event.sourceRef);
      break;
    case '@xstate.snapshot':
    case '@xstate.transition':
      out.event = eventOf(event.event);
      out.snapshot = snapshotOf(event.snapshot);
      break;
    case '@xstate.microstep':
      out.event = eventOf(event.event);
      out.snapshot = snapshotOf(event.snapshot);
      out.transitions = event._transitions.map((t) => ({
        source: t.source.id,
        targets: (t.target ?? []).map((node) => node.id),
        eventType: String(t.eventType),
      }));
      break;
    case '@xstate.action':
      out.action = { type: event.action.type };
      if (event.action.params !== undefined) out.action.params = jsonSafe(event.action.params, EVENT_LIMITS, actorRefs);
      break;
    case '@xstate.actor':
      break;
  }
  return out;
}

function eventOf(event: { type: string }): { type: string; [key: string]: unknown } {
  const safe = jsonSafe(event, EVENT_LIMITS, actorRefs);
  return typeof safe === 'object' && safe !== null && !Array.isArray(safe)
    ? { ...(safe as Record<string, unknown>), type: String(event.type) }
    : { type: String(event.type) };
}

function snapshotOf(snapshot: unknown): SerializedSnapshot {
  const s = snapshot as { status?: unknown; value?: unknown; context?: unknown; output?: unknown; error?: unknown };
  const out: SerializedSnapshot = { status: typeof s.status === 'string' ? s.status : 'active' };
  if (s.value !== undefined) out.value = jsonSafe(s.value, EVENT_LIMITS, actorRefs);
  if (s.context !== undefined && s.context !== null) {
    const context = jsonSafe(s.context, CONTEXT_LIMITS, actorRefs);
    if (typeof context === 'object' && context !== null && !Array.isArray(context)) out.context = context as Record<string, unknown>;
  }
  if (s.output !== undefined) out.output = jsonSafe(s.output, CONTEXT_LIMITS, actorRefs);
  if (s.error !== undefined) out.error = jsonSafe(s.error, CONTEXT_LIMITS, actorRefs);
  return out;
}
