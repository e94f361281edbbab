// @ts-check
/*
 * The Switchyard inspector page: ES modules, no build step, no network beyond the gateway it
 * came from. It follows the engine over the gateway's JSON-RPC WebSocket (inspect.subscribe,
 * events.subscribe, engine.snapshot) and draws the live actors, the statechart of the selected
 * one, the selected run's events and tool batches, and the limiter; from the store (runs.query,
 * run.history) it lists past runs, replays one event by event (/inspect/run/<runId>) and tells
 * a session's story (/inspect/session/<sessionId>). This module wires them: the RPC client
 * (rpc-client.js) feeds the store (store.js), and every view draws from the store once per
 * animation frame (views/). docs/inspector.md has the map.
 */
import { createRpcClient } from './rpc-client.js';
import { createStore } from './store.js';
import { links, routeOf } from './routes.js';
import { selectedRunId } from './selectors.js';
import { createActorTree } from './views/actor-tree.js';
import { createEventLog } from './views/event-log.js';
import { renderLimiter } from './views/limiter.js';
import { createReplayBar } from './views/replay-bar.js';
import { createRunsList } from './views/runs-list.js';
import { createSessionView } from './views/session-view.js';
import { createStatechart } from './views/statechart.js';
import { createToolBatches } from './views/tool-batches.js';
import { renderWhere } from './views/where.js';

/** @typedef {import('./wire-types.js').RunEvent} RunEvent */
/** @typedef {import('./wire-types.js').StatechartEntry} StatechartEntry */

const SNAPSHOT_EVERY_MS = 500;

/**
 * An element of the page (index.html has them all).
 * @template {HTMLElement} [E=HTMLElement]
 * @param {string} testid
 * @returns {E}
 */
function byTestId(testid) {
  const node = document.querySelector(`[data-testid="${testid}"]`);
  if (!node) throw new Error(`the page has no ${testid}`);
  return /** @type {E} */ (node);
}

// The token comes in the address once; the tab keeps it, and the address bar (and with it
// bookmarks, history and screenshots) loses it. Assets and reloads use the page's cookie.
const address = new URL(location.href);
const token = address.searchParams.get('token') || sessionStorage.getItem('switchyard-token') || '';
sessionStorage.setItem('switchyard-token', token);
if (address.searchParams.has('token')) {
  address.searchParams.delete('token');
  history.replaceState(history.state, '', `${address.pathname}${address.search}${address.hash}`);
}
const query = `?token=${encodeURIComponent(token)}`;

const store = createStore();
const rpc = createRpcClient({
  url: `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/${query}`,
  onOpen: () => void subscribe(),
  onConnection: (state, text) => store.connectionChanged(state, text),
  onNotification(notification) {
    if (notification.method === 'inspect') store.inspected(notification.params.event);
    else if (notification.method === 'event') {
      const event = notification.params.event;
      // Engine-wide events carry no run: the gauges poll the snapshot.
      if ('runId' in event) runEventsArrived([event]);
    }
  },
});
const call = rpc.call;

/** @param {RunEvent[]} events */
function runEventsArrived(events) {
  store.runEventsArrived(events);
  for (const event of events) {
    runsList.onRunEvent(event);
    sessionView.onRunEvent(event);
  }
}

async function subscribe() {
  try {
    await call('inspect.subscribe', {});
    await call('events.subscribe', {});
    // What the page held may have missed events while it was away: read again.
    const runId = selectedRunId(store.state);
    if (runId) store.historyFailed(runId);
    void runsList.reload();
    if (store.state.replay) void replayBar.loadStatus();
    if (store.state.session) {
      store.sessionReset();
      void sessionView.loadPage();
    }
    await pollSnapshot();
  } catch (error) {
    store.connectionChanged('error', `subscribe failed: ${error instanceof Error ? error.message : error}`);
  }
}

/** The selected run's log, read once (and again after a reconnection). */
async function loadHistory() {
  const runId = selectedRunId(store.state);
  if (!runId || !rpc.open || !store.historyRequested(runId)) return;
  try {
    runEventsArrived(await call('run.history', { runId }));
  } catch {
    store.historyFailed(runId);
  }
}

async function pollSnapshot() {
  try {
    const requestedAt = performance.now();
    store.snapshotRead(await call('engine.snapshot', {}), requestedAt);
  } catch {
    // Not connected: the next connection polls again.
  }
}

// ---------------------------------------------------------------------------------------
// Views

const followBox = byTestId(/** @type {'follow-latest'} */ ('follow-latest'));
const connBox = byTestId('conn-status');
const runsList = createRunsList({ root: byTestId('history'), store, call });
const replayBar = createReplayBar({ root: byTestId('replay'), store, call });
const sessionView = createSessionView({ root: byTestId('session'), store, call });
const actorTree = createActorTree({
  list: byTestId('actor-tree'),
  store,
  select(actorId) {
    if (store.state.route.view !== 'live') navigate(links.live());
    store.actorSelected(actorId);
  },
});
const statechart = createStatechart({
  box: byTestId('statechart'),
  meta: byTestId('chart-meta'),
  fit: byTestId('chart-fit'),
  store,
});
const eventLog = createEventLog({ box: byTestId('event-log'), meta: byTestId('log-meta'), store });
const toolBatches = createToolBatches({ box: byTestId('timeline'), store, redraw: () => frame() });
const where = byTestId('where');
const limiterBoxes = { gauges: byTestId('gauges'), summary: byTestId('summary') };

function draw() {
  const state = store.state;
  document.body.dataset['view'] = state.route.view;
  document.body.dataset['tab'] = state.tab;
  connBox.dataset['state'] = state.connection.state;
  connBox.textContent = state.connection.text;
  /** @type {HTMLInputElement} */ (followBox).checked = state.follow;
  renderWhere(where, state);
  actorTree.render();
  replayBar.render();
  statechart.render();
  toolBatches.render();
  eventLog.render();
  renderLimiter(limiterBoxes, state);
  runsList.render();
  sessionView.render();
}

let frameRequested = false;
/** Draws in the next animation frame, once however many changes came before it. */
function frame() {
  if (frameRequested) return;
  frameRequested = true;
  requestAnimationFrame(() => {
    frameRequested = false;
    store.prune();
    void loadHistory();
    draw();
  });
}
store.subscribe(frame);

// ---------------------------------------------------------------------------------------
// Navigation: the address says which view.

/** @param {string} href */
function navigate(href) {
  if (href !== `${location.pathname}${location.search}`) history.pushState(null, '', href);
  applyRoute();
}

/** Shows the view the address names; a replay or a session opened anew reads what it shows. */
function applyRoute() {
  const { replay, session } = store.state;
  store.routeChanged(routeOf(location.pathname));
  if (store.state.replay && store.state.replay !== replay) void replayBar.loadStatus();
  if (store.state.session && store.state.session !== session) void sessionView.loadPage();
}

document.addEventListener('click', (event) => {
  // Links to the page's own views navigate inside it.
  const link = /** @type {Element} */ (event.target).closest('a[href^="/inspect"]');
  const href = link && link.getAttribute('href');
  if (
    !href ||
    event.defaultPrevented ||
    event.button !== 0 ||
    event.metaKey ||
    event.ctrlKey ||
    event.shiftKey ||
    event.altKey
  )
    return;
  event.preventDefault();
  navigate(href);
});
window.addEventListener('popstate', applyRoute);
document.addEventListener('keydown', (event) => {
  const target = /** @type {Element} */ (event.target);
  if (target.closest('input, select, textarea, button, [role="treeitem"]')) return;
  if (replayBar.key(event)) event.preventDefault();
});
for (const tab of document.querySelectorAll('.tab')) {
  tab.addEventListener('click', () => {
    const chosen = tab instanceof HTMLElement ? tab.dataset['tab'] : undefined;
    if (chosen === 'live' || chosen === 'history') store.tabChosen(chosen);
  });
}
followBox.addEventListener('change', () => store.followChanged(/** @type {HTMLInputElement} */ (followBox).checked));

fetch(`/inspect/machines.json${query}`)
  .then((response) => {
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    return /** @type {Promise<{ machines: StatechartEntry[] }>} */ (response.json());
  })
  .then((catalog) => {
    store.machinesLoaded(catalog.machines);
    document.body.dataset['statecharts'] = 'loaded';
  })
  .catch((error) => store.connectionChanged('error', `could not load the statecharts: ${error.message}`));

applyRoute();
rpc.connect();
setInterval(() => {
  if (rpc.open) void pollSnapshot();
}, SNAPSHOT_EVERY_MS);
frame();
