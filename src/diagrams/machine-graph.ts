/*
 * A statechart as plain data: the state nodes of an XState v5 machine (with their nesting)
 * and its transitions, labelled the way a reader names them — the event type, `always`,
 * `after <delay>`, `done: <invoked actor>`, `error: <invoked actor>` — with guard names in
 * brackets. Shared by the SVG export and the inspector page.
 */
import type { AnyStateMachine, AnyStateNode, AnyTransitionDefinition as Transition } from 'xstate';

export type StateKind = 'atomic' | 'compound' | 'parallel' | 'final' | 'history';

export interface StateGraphNode {
  /** The state node's id, e.g. 'run.live.running.thinking'; the root's id is the machine id. */
  id: string;
  label: string;
  parent?: string;
  type: StateKind;
  /** The initial child of its parent. */
  initial?: boolean;
  /** Sources of the actors this state invokes. */
  invokes?: string[];
  /** Transitions without a target: events handled in place (actions only). */
  internal?: string[];
  /** The keys from the root, as they appear in a snapshot's value ('' for the root). */
  path: string;
}

export interface StateGraphEdge {
  source: string;
  target: string;
  label: string;
}

export interface MachineGraph {
  machineId: string;
  nodes: StateGraphNode[];
  edges: StateGraphEdge[];
}

export function machineGraph(machine: AnyStateMachine): MachineGraph {
  const nodes: StateGraphNode[] = [];
  const edges: StateGraphEdge[] = [];
  const visit = (state: AnyStateNode): void => {
    const node: StateGraphNode = {
      id: state.id,
      label: state.parent ? state.key : machine.id,
      type: state.type,
      path: state.path.join('.'),
    };
    if (state.parent) {
      node.parent = state.parent.id;
      if (initialIdsOf(state.parent).has(state.id)) node.initial = true;
    }
    const invokes = state.invoke.map((def) => invokeSourceName(def.src, def.id));
    if (invokes.length > 0) node.invokes = invokes;
    const internal: string[] = [];
    const transitions: Transition[] = [...[...state.transitions.values()].flat(), ...(state.always ?? [])];
    for (const transition of transitions) {
      const label = transitionLabel(state, transition);
      if (!transition.target || transition.target.length === 0) {
        internal.push(label);
        continue;
      }
      for (const target of transition.target) edges.push({ source: state.id, target: target.id, label });
    }
    if (internal.length > 0) node.internal = internal;
    nodes.push(node);
    for (const child of Object.values(state.states) as AnyStateNode[]) visit(child);
  };
  visit(machine.root);
  return { machineId: machine.id, nodes, edges };
}

function initialIdsOf(state: AnyStateNode): Set<string> {
  return new Set((state.initial?.target ?? []).map((t: AnyStateNode) => t.id));
}

function invokeSourceName(src: unknown, id: string): string {
  if (typeof src === 'string') return src;
  const machineId = (src as { id?: unknown } | null)?.id;
  return typeof machineId === 'string' ? machineId : id;
}

function guardName(guard: unknown): string | undefined {
  if (guard === undefined) return undefined;
  if (typeof guard === 'string') return guard;
  if (typeof guard === 'function') return guard.name || 'guard';
  const { type, params } = guard as { type?: unknown; params?: unknown };
  if (typeof type !== 'string') return 'guard';
  return ['string', 'number', 'boolean'].includes(typeof params) ? `${type}(${String(params)})` : type;
}

function eventLabel(state: AnyStateNode, transition: Transition): string {
  if (state.always?.includes(transition)) return 'always';
  const eventType = String(transition.eventType);
  const delayed = state.after.find((t: { eventType: unknown }) => t.eventType === eventType);
  if (delayed)
    return `after ${typeof delayed.delay === 'number' ? `${delayed.delay} ms` : typeof delayed.delay === 'string' ? delayed.delay : 'delay'}`;
  const actor = /^xstate\.(done|error)\.actor\.(.+)$/.exec(eventType);
  if (actor) {
    const [, kind, id] = actor;
    const invoked = state.invoke.find((def: { id: string }) => def.id === id);
    return `${kind}: ${invoked ? invokeSourceName(invoked.src, invoked.id) : id === '*' ? 'any child' : id}`;
  }
  if (eventType.startsWith('xstate.done.state.')) return 'done';
  return eventType;
}

function transitionLabel(state: AnyStateNode, transition: Transition): string {
  const guard = guardName(transition.guard);
  const event = eventLabel(state, transition);
  return guard ? `${event} [${guard}]` : event;
}
