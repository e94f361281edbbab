// @ts-check
/*
 * The live actors as a tree: the limiter, the sessions, their runs (a run still waiting in its
 * lane too), each run's tool batch and tool calls, and the async work running for them (a
 * model turn, a tool execution, an approval wait). Clicking or Enter selects one (the
 * statechart, the events and the tool batches follow it); ↑ ↓ move between them. Rows keep
 * their elements across redraws (keyed by actor id), so focus and a click in progress stay.
 */
import { html, render } from '../vendor/lit-html/lit-html.js';
import { repeat } from '../vendor/lit-html/directives/repeat.js';
import { shortId } from '../format.js';
import { logicalParent, shownActors, stateText } from '../selectors.js';
import { latestRunId } from '../store.js';

/** @typedef {import('../store.js').Actor} Actor */
/** @typedef {import('../store.js').State} State */
/** @typedef {{ actor: Actor, depth: number, selected: boolean, name: string, kind: string, text: string }} Row */

/** @param {Actor} actor */
function actorLabel(actor) {
  const own = actor.id.split('/').pop() ?? actor.id;
  const context = actor.context ?? {};
  if (actor.machineId === 'limiter') return { name: 'limiter', kind: 'limiter' };
  if (actor.machineId === 'session') return { name: actor.id.replace(/^session:/, ''), kind: 'session' };
  if (actor.machineId === 'run') return { name: shortId(actor.id.replace(/^run:/, '')), kind: 'run' };
  if (actor.machineId === 'act') {
    const turn = context['turn'];
    return { name: typeof turn === 'number' ? `turn ${turn + 1}` : own, kind: 'tool batch' };
  }
  if (actor.machineId === 'toolCall') {
    const tool = context['tool'];
    return { name: typeof tool === 'string' ? tool : own, kind: own };
  }
  if (!actor.machineId) return { name: own, kind: EFFECT_KINDS[own.split(':')[0] ?? ''] ?? 'async work' };
  return { name: own, kind: actor.machineId };
}

/** What a chart's async work is, by the first part of its id (src/engine/inspection.ts). */
/** @type {Record<string, string>} */
const EFFECT_KINDS = { turn: 'model turn', exec: 'tool execution', approval: 'approval wait' };

/** @type {Record<string, number>} */
const RANK = { limiter: 0, session: 1, run: 2 };
/** @param {Actor} actor */
const rankOf = (actor) => RANK[actor.machineId ?? ''] ?? 3;

/**
 * The tree, depth first, in the order it is listed.
 * @param {Readonly<State>} state
 * @returns {Row[]}
 */
export function treeRows(state) {
  const actors = shownActors(state);
  /** @type {Map<string, Actor[]>} */
  const children = new Map();
  /** @type {Actor[]} */
  const roots = [];
  for (const actor of actors.values()) {
    const parent = logicalParent(state, actor);
    if (parent && actors.has(parent)) children.set(parent, [...(children.get(parent) ?? []), actor]);
    else roots.push(actor);
  }
  /** @param {Actor[]} list */
  const sort = (list) => list.sort((a, b) => rankOf(a) - rankOf(b) || a.order - b.order);
  const latest = `run:${latestRunId(state)}`;
  /** @type {Row[]} */
  const rows = [];
  /** @param {Actor} actor @param {number} depth */
  const walk = (actor, depth) => {
    const selected = actor.id === state.selectedActorId || (!state.selectedActorId && actor.id === latest);
    rows.push({ actor, depth, selected, ...actorLabel(actor), text: stateText(actor) });
    for (const child of sort(children.get(actor.id) ?? [])) walk(child, depth + 1);
  };
  for (const root of sort(roots)) walk(root, 0);
  return rows;
}

/** @param {Row} row */
function item({ actor, depth, selected, name, kind, text }) {
  return html`<li
    class="actor${selected ? ' selected' : ''} status-${actor.status}"
    style="--depth:${depth}"
    title=${actor.id}
    role="treeitem"
    tabindex="0"
    aria-selected=${String(selected)}
    aria-level=${depth + 1}
    data-testid="actor-item"
    data-actor-id=${actor.id}
    data-machine=${actor.machineId || ''}
    data-state=${text}
    data-status=${actor.status}
  >
    <span class="dot" aria-hidden="true"></span><span class="actor-kind">${kind}</span
    ><span class="actor-name">${name}</span><span class="actor-state">${text}</span>
  </li>`;
}

/**
 * @param {{ list: HTMLElement, store: import('../store.js').Store, select(actorId: string): void }} options
 */
export function createActorTree({ list, store, select }) {
  let scrolledTo = '';
  list.addEventListener('click', (event) => {
    const target = /** @type {Element} */ (event.target);
    const item = target.closest('[data-actor-id]');
    if (item instanceof HTMLElement && item.dataset['actorId']) select(item.dataset['actorId']);
  });
  list.addEventListener('keydown', (event) => {
    const item = /** @type {Element} */ (event.target).closest('[data-actor-id]');
    if (!(item instanceof HTMLElement)) return;
    if (event.key === 'Enter' || event.key === ' ') {
      event.preventDefault();
      if (item.dataset['actorId']) select(item.dataset['actorId']);
    } else if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
      event.preventDefault();
      const next = event.key === 'ArrowDown' ? item.nextElementSibling : item.previousElementSibling;
      if (next instanceof HTMLElement) next.focus();
    }
  });
  return {
    render() {
      const rows = treeRows(store.state);
      render(
        repeat(
          rows,
          (row) => row.actor.id,
          (row) => item(row),
        ),
        list,
      );
      // While following, the newest run is scrolled into view once, when it becomes the selected one.
      const selected = rows.find((row) => row.selected);
      if (store.state.follow && selected && selected.actor.id !== scrolledTo) {
        scrolledTo = selected.actor.id;
        list.querySelector('.actor.selected')?.scrollIntoView({ block: 'nearest' });
      }
    },
  };
}
