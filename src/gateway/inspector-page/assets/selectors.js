// @ts-check
/*
 * What the views read off the state, derived and never stored: the selected run, the replay
 * at its scrubber, the actors to list (with the runs still waiting in a lane, which have no
 * actor yet), and how an actor's state is written.
 */
import { RUN_STATE_BEFORE_EVENTS, runStatePaths, stateValueOf } from './run-replay.js';
import { latestRunId, runIdOfActor } from './store.js';

/** @typedef {import('./store.js').State} State */
/** @typedef {import('./store.js').Actor} Actor */
/** @typedef {import('./store.js').KnownRun} KnownRun */
/** @typedef {import('./wire-types.js').RunEvent} RunEvent */

/** @param {KnownRun} run */
export function sortedEvents(run) {
  return [...run.events.values()].sort((a, b) => a.seq - b.seq);
}

/**
 * The replay at its scrubber: the run's events, how many are shown, and the run's actor as it
 * was there (what the statechart lights up).
 * @param {Readonly<State>} state
 */
export function replayAt(state) {
  const replay = state.replay;
  if (!replay) return undefined;
  const run = state.runs.get(replay.runId);
  const events = run ? sortedEvents(run) : [];
  const index = replay.following ? events.length : Math.min(replay.index, events.length);
  const paths = runStatePaths(events);
  const path = index === 0 ? RUN_STATE_BEFORE_EVENTS : (paths[index - 1] ?? RUN_STATE_BEFORE_EVENTS);
  const ended = path === 'completed' || path === 'cancelled' || path === 'failed';
  /** @type {Actor} */
  const actor = {
    id: `run:${replay.runId}`,
    machineId: 'run',
    value: stateValueOf(path),
    status: ended ? 'done' : 'active',
    order: 0,
    seenAt: 0,
  };
  const current = events[index - 1] ?? events[0];
  return {
    ...replay,
    events,
    index,
    path,
    actor,
    /** The time the scrubber stands at (the current event's). */
    time: current ? Date.parse(current.at) : undefined,
  };
}

/**
 * The run whose events and tool batches are shown: the replayed one, the selected actor's, or the latest.
 * @param {Readonly<State>} state
 */
export function selectedRunId(state) {
  if (state.replay) return state.replay.runId;
  const fromSelection = state.selectedActorId && runIdOfActor(state.selectedActorId);
  return fromSelection || latestRunId(state);
}

/**
 * The run's events up to the replay's scrubber (all of them outside a replay).
 * @param {Readonly<State>} state
 * @param {KnownRun} run
 */
export function visibleEvents(state, run) {
  const replay = replayAt(state);
  return replay && replay.runId === run.runId ? replay.events.slice(0, replay.index) : sortedEvents(run);
}

/**
 * The live actors (async work only while it and its parent run) and, for what has none yet, stand-ins: a run still waiting in its session's
 * lane (or one that ended before it started), the session of a run, the limiter.
 * @param {Readonly<State>} state
 * @returns {Map<string, Actor>}
 */
export function shownActors(state) {
  const actors = new Map(state.actors);
  for (const run of state.runs.values()) {
    const id = `run:${run.runId}`;
    if (!actors.has(id))
      actors.set(id, {
        id,
        machineId: 'run',
        placeholder: true,
        status: run.terminal ? 'done' : 'waiting',
        order: run.order,
        seenAt: 0,
      });
  }
  for (const actor of [...actors.values()]) {
    const parent = logicalParent(state, actor);
    if (parent && !actors.has(parent) && parent.startsWith('session:'))
      actors.set(parent, { id: parent, machineId: 'session', status: 'active', order: actor.order, seenAt: 0 });
  }
  // Async work is shown while it runs under an actor still running; one whose end the page
  // missed (a reconnect) goes with its parent.
  for (const actor of [...actors.values()]) {
    if (actor.machineId || actor.placeholder) continue;
    const parent = actor.parentId === undefined ? undefined : actors.get(actor.parentId);
    if (!parent || parent.status !== 'active') actors.delete(actor.id);
  }
  if (!actors.has('limiter'))
    actors.set('limiter', {
      id: 'limiter',
      machineId: 'limiter',
      value: 'limiting',
      status: 'active',
      order: 0,
      seenAt: 0,
    });
  return actors;
}

/**
 * Runs have no XState parent (each is its own system); they hang under their session.
 * @param {Readonly<State>} state
 * @param {Actor} actor
 */
export function logicalParent(state, actor) {
  if (actor.parentId) return actor.parentId;
  if (actor.machineId === 'run') {
    const run = state.runs.get(actor.id.slice(4));
    if (run && run.sessionId) return `session:${run.sessionId}`;
  }
  return undefined;
}

/**
 * The actor the statechart shows: the replayed run, the selected actor, the latest run or the limiter.
 * @param {Readonly<State>} state
 */
export function selectedActor(state) {
  const replay = replayAt(state);
  if (replay) return replay.actor;
  const latest = latestRunId(state);
  const id = state.selectedActorId || (latest ? `run:${latest}` : 'limiter');
  return shownActors(state).get(id);
}

/**
 * 'live.running.thinking' style paths of the innermost states of a state value.
 * @param {unknown} value
 * @param {string} prefix
 * @returns {string[]}
 */
export function leafPaths(value, prefix) {
  if (value === undefined || value === null) return [];
  if (typeof value === 'string') return [prefix ? `${prefix}.${value}` : value];
  if (typeof value !== 'object') return [];
  /** @type {string[]} */
  const out = [];
  for (const [key, child] of Object.entries(value)) {
    const path = prefix ? `${prefix}.${key}` : key;
    const below = leafPaths(child, path);
    if (below.length === 0) out.push(path);
    else out.push(...below);
  }
  return out;
}

/** @param {Actor} actor */
export function stateText(actor) {
  if (actor.placeholder) return actor.status === 'waiting' ? 'waiting in the lane' : 'ended before it started';
  if (!actor.machineId) return 'running';
  const leaves = leafPaths(actor.value, '');
  return leaves.length ? leaves.join(' | ') : '–';
}
