/*
 * The inspection stream as JSON text: one frame per XState InspectionEvent, in the shape
 * inspect-serialize.ts describes, made once for every subscriber (inspect-fanout.ts). A run
 * makes a couple of hundred inspection events, so a frame is built from parts made once:
 *
 * - each actor's ids (actorId, rootId, parentId, sessionId, machineId), at its first event;
 * - each XState event, which comes with its '@xstate.event', every microstep it causes and
 *   the '@xstate.snapshot' that ends the step: the same object, copied once;
 * - each actor's context, sent whole with the actor's first snapshot on this stream and then
 *   as `contextChanges`/`contextRemoved`: XState's assign keeps the values it does not touch
 *   as the same objects, so a change is found by identity and only changed values are copied.
 *
 * A microstep's snapshot says where the actor went (status and value); the context it got
 * comes with the '@xstate.snapshot' that ends the step, after the microsteps. A reader keeps
 * each actor's context and merges the changes into it (docs/inspector.md).
 */
import type { InspectionEvent } from 'xstate';
import {
  actorIdOf,
  CONTEXT_KEYS,
  contextValueText,
  eventText,
  machineIdOf,
  outcomeText,
  payloadText,
  rootOf,
  type ActorShape,
} from './inspect-serialize.js';
import { InspectionTransitions, type TransitionRecord } from './inspection-transitions.js';
import { quoteName } from '../json-safe.js';

type Context = Record<string, unknown>;

/** XState events whose JSON is kept (see recentEvents). */
const RECENT_EVENTS = 16;

interface SnapshotShape {
  status?: unknown;
  value?: unknown;
  context?: unknown;
  output?: unknown;
  error?: unknown;
}

type TransitionShape = TransitionRecord['transitions'][number];

const json = (value: unknown): string => JSON.stringify(value) ?? 'null';

function isContext(value: unknown): value is Context {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export class InspectionFrames {
  /** actor → its ids as JSON members. */
  private readonly heads = new WeakMap<object, string>();
  /** actor → its actorId as a JSON string. */
  private readonly ids = new WeakMap<object, string>();
  /**
   * The last XState events and their JSON, newest first, as [event, json, event, json, …]: an
   * event's microsteps and snapshot follow its '@xstate.event' within a few frames (an event
   * sent on to another actor is taken in between), and a short list finds it faster than a
   * WeakMap that every event would be added to.
   */
  private readonly recentEvents: unknown[] = [];
  /** A machine's transition (a static definition) → its JSON. */
  private readonly transitions = new WeakMap<object, string>();
  /** actor → the context its last frame on this stream brought the reader to. */
  private readonly contexts = new WeakMap<object, Context>();
  /** Gathers each step into one transition record. */
  private readonly steps = new InspectionTransitions();
  /** The snapshot JSON of the last '@xstate.snapshot' frame: its transition record carries the same. */
  private lastSnapshotText = '';

  /** The frame of one live event. */
  frame(event: InspectionEvent, at = Date.now()): string {
    return this.build(event, at, false);
  }

  /**
   * The frames of one live event: its own, then the '@xstate.transition' record of the step it
   * ends, if it ends one. XState 6 reports a step only as that record; it then is the one frame.
   */
  frames(event: InspectionEvent, at = Date.now()): string[] {
    const record = this.steps.observe(event);
    if (event.type === '@xstate.transition') {
      return [
        this.transitionFrame(record!, this.snapshotJson(event.actorRef, event.snapshot as SnapshotShape, false), at),
      ];
    }
    const own = this.build(event, at, false);
    return record ? [own, this.transitionFrame(record, this.lastSnapshotText, at)] : [own];
  }

  /**
   * The frame of an actor as it is now, its context whole: what a subscriber that arrives
   * late starts from (the engine's inspectionSnapshot()). Should the actor have moved since
   * its last frame on this stream, its next live frame is whole again, for every reader.
   */
  whole(event: InspectionEvent, at = Date.now()): string {
    if (
      event.type === '@xstate.snapshot' &&
      this.contexts.get(event.actorRef) !== (event.snapshot as SnapshotShape).context
    ) {
      this.contexts.delete(event.actorRef);
    }
    return this.build(event, at, true);
  }

  private build(event: InspectionEvent, at: number, whole: boolean): string {
    const actor = event.actorRef as unknown as ActorShape;
    let body = '';
    switch (event.type) {
      case '@xstate.event':
        body = `,"event":${this.eventJson(event.event)}`;
        if (event.sourceRef) body += `,"sourceId":${this.quotedId(event.sourceRef)}`;
        break;
      case '@xstate.snapshot':
      case '@xstate.transition':
        this.lastSnapshotText = this.snapshotJson(event.actorRef, event.snapshot as SnapshotShape, whole);
        body = `,"event":${this.eventJson(event.event)},"snapshot":${this.lastSnapshotText}`;
        break;
      case '@xstate.microstep': {
        const s = event.snapshot as SnapshotShape;
        body = `,"event":${this.eventJson(event.event)},"snapshot":{${positionJson(s)}}`;
        body += `,"transitions":[${event._transitions.map((t) => this.transitionJson(t as unknown as TransitionShape)).join(',')}]`;
        break;
      }
      case '@xstate.action': {
        const params = event.action.params === undefined ? '' : `,"params":${payloadText(event.action.params)}`;
        body = `,"action":{"type":${quoteName(String(event.action.type))}${params}}`;
        break;
      }
      case '@xstate.actor':
        break;
    }
    return `{"type":${quoteName(event.type)},${this.head(actor)}${body},"at":${at}}`;
  }

  /** One step as one record: the event, who sent it, the state-node transitions and the snapshot it reached. */
  private transitionFrame(record: TransitionRecord, snapshotText: string, at: number): string {
    let body = `,"event":${this.eventJson(record.event)}`;
    if (record.sourceRef) body += `,"sourceId":${this.quotedId(record.sourceRef)}`;
    if (record.transitions.length > 0)
      body += `,"transitions":[${record.transitions.map((t) => this.transitionJson(t)).join(',')}]`;
    return `{"type":"@xstate.transition",${this.head(record.actorRef as unknown as ActorShape)}${body},"snapshot":${snapshotText},"at":${at}}`;
  }

  private head(actor: ActorShape): string {
    let head = this.heads.get(actor);
    if (head === undefined) {
      head = `"actorId":${this.quotedId(actor)},"rootId":${this.quotedId(rootOf(actor))},"sessionId":${json(actor.sessionId)}`;
      if (actor._parent) head += `,"parentId":${this.quotedId(actor._parent)}`;
      const machineId = machineIdOf(actor);
      if (machineId !== undefined) head += `,"machineId":${json(machineId)}`;
      this.heads.set(actor, head);
    }
    return head;
  }

  private quotedId(actor: object): string {
    let quoted = this.ids.get(actor);
    if (quoted === undefined) {
      quoted = json(actorIdOf(actor));
      this.ids.set(actor, quoted);
    }
    return quoted;
  }

  private eventJson(event: { type: string }): string {
    const recent = this.recentEvents;
    for (let i = 0; i < recent.length; i += 2) if (recent[i] === event) return recent[i + 1] as string;
    const text = eventText(event);
    recent.unshift(event, text);
    if (recent.length > RECENT_EVENTS * 2) recent.length = RECENT_EVENTS * 2;
    return text;
  }

  private transitionJson(transition: TransitionShape): string {
    let text = this.transitions.get(transition);
    if (text === undefined) {
      text = json({
        source: transition.source.id,
        targets: (transition.target ?? []).map((node) => node.id),
        eventType: String(transition.eventType),
      });
      this.transitions.set(transition, text);
    }
    return text;
  }

  /** Status, value, the context (whole or what changed), output and error. */
  private snapshotJson(actor: object, s: SnapshotShape, whole: boolean): string {
    let text = positionJson(s);
    if (isContext(s.context)) {
      const last = this.contexts.get(actor);
      // A frame for a late subscriber tells the others nothing new: the basis stays.
      if (!whole) this.contexts.set(actor, s.context);
      if (whole || last === undefined) text += `,"context":${wholeContext(s.context)}`;
      else if (last !== s.context) text += contextDelta(last, s.context);
    }
    if (s.output !== undefined) text += `,"output":${outcomeText(s.output)}`;
    if (s.error !== undefined) text += `,"error":${outcomeText(s.error)}`;
    return `{${text}}`;
  }
}

/** Where an actor is: its status, and its state value if it is a machine. */
function positionJson(s: SnapshotShape): string {
  const status = `"status":${quoteName(typeof s.status === 'string' ? s.status : 'active')}`;
  // A state value is state names in objects: nothing JSON refuses, nothing without bound.
  return s.value === undefined ? status : `${status},"value":${json(s.value)}`;
}

function wholeContext(context: Context): string {
  const keys = Object.keys(context);
  const members: string[] = [];
  for (const key of keys.slice(0, CONTEXT_KEYS)) {
    const value = contextValueText(context[key]);
    if (value !== undefined) members.push(`${quoteName(key)}:${value}`);
  }
  if (keys.length > CONTEXT_KEYS) members.push(`"…":${json(`${keys.length - CONTEXT_KEYS} more keys`)}`);
  return `{${members.join(',')}}`;
}

/** `contextChanges` and `contextRemoved` from one context to the next, as JSON members. */
function contextDelta(last: Context, next: Context): string {
  let changes = '';
  const removed: string[] = [];
  let seen = 0;
  // for…in, not Object.keys: a context is a plain object, and this runs for every snapshot.
  for (const key in next) {
    if (seen++ >= CONTEXT_KEYS) break;
    const value = next[key];
    if (value === last[key]) continue;
    const text = contextValueText(value);
    if (text === undefined) removed.push(key);
    else changes += `${changes === '' ? '' : ','}${quoteName(key)}:${text}`;
  }
  for (const key in last) if (!Object.hasOwn(next, key)) removed.push(key);
  let text = '';
  if (changes !== '') text += `,"contextChanges":{${changes}}`;
  if (removed.length > 0) text += `,"contextRemoved":${json(removed)}`;
  return text;
}
