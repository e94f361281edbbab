// @ts-check
/*
 * The runs list: the stored runs newest first (`runs.query`, docs/protocol.md), a page at a
 * time, filtered by session, state and outcome, and the sessions they belong to. It follows
 * the engine: a run that is queued, starts or ends refreshes the pages already shown (and
 * they are read again every few seconds, for the runs of other processes of a cluster). Each
 * run links to its replay (/inspect/run/<runId>), each session to its story.
 */
import { html, render } from '../vendor/lit-html/lit-html.js';
import { repeat } from '../vendor/lit-html/directives/repeat.js';
import { formatDuration, formatTime, plural, shortId } from '../format.js';
import { links } from '../routes.js';

/** @typedef {import('../wire-types.js').RunSummary} RunSummary */
/** @typedef {import('../wire-types.js').RunEvent} RunEvent */
/** @typedef {import('../store.js').RunsListState} RunsListState */

const PAGE = 40;
const REFRESH_AFTER_MS = 300;
/** Runs of other processes of a cluster send this page no events: the pages shown are read again this often. */
const REFRESH_EVERY_MS = 5000;
const FOLLOWED = new Set(['run.queued', 'run.started', 'run.completed', 'run.failed', 'run.cancelled']);
const KNOWN_OUTCOMES = [
  'completed',
  'interrupted',
  'superseded',
  'stopped',
  'purged',
  'cancelled',
  'timeout',
  'max_iterations',
  'model_error',
  'lane_timeout',
  'internal',
];
/** @type {readonly string[]} */
const RUN_STATES = ['queued', 'running', 'completed', 'cancelled', 'failed'];

/**
 * How long a run took (or has taken so far): from its start, or for one that never started, from its message.
 * @param {RunSummary} run
 * @param {number} now
 */
export function durationOf(run, now) {
  const from = Date.parse(run.startedAt || run.createdAt);
  const to = run.endedAt ? Date.parse(run.endedAt) : now;
  return Math.max(0, to - from);
}

/**
 * @param {RunSummary} run
 * @param {number} now
 * @param {string | undefined} selected
 */
function runItem(run, now, selected) {
  const outcome = run.outcome || run.state;
  const details = [
    run.startedAt ? `started ${formatTime(run.startedAt)}` : `sent ${formatTime(run.createdAt)}`,
    formatDuration(durationOf(run, now)),
    run.turns === undefined ? undefined : plural(run.turns, 'turn', 'turns'),
    run.toolCalls === undefined ? undefined : plural(run.toolCalls, 'tool call', 'tool calls'),
  ].filter(Boolean);
  return html`<li class="run-item state-${run.state}${run.runId === selected ? ' selected' : ''}">
    <a
      class="run-link"
      href=${links.run(run.runId)}
      title="${run.runId} · ${run.state}${run.outcome ? ` (${run.outcome})` : ''}"
      data-testid="run-item"
      data-run-id=${run.runId}
      data-session=${run.sessionId}
      data-state=${run.state}
      data-outcome=${run.outcome || ''}
      ><span class="run-line"
        ><span class="dot" aria-hidden="true"></span><span class="run-id">${shortId(run.runId)}</span
        ><span class="run-session">${run.sessionId}</span
        ><span class="pill outcome outcome-${run.state}">${outcome}</span></span
      ><span class="run-input">${run.input || '—'}</span
      ><span class="run-details" data-testid="run-details">${details.join(' · ')}</span></a
    >
  </li>`;
}

/** @param {RunsListState} list */
function sessionsOf(list) {
  /** @type {string[]} */
  const sessions = [];
  for (const run of list.runs) if (!sessions.includes(run.sessionId)) sessions.push(run.sessionId);
  return sessions;
}

/**
 * @param {{ root: HTMLElement, store: import('../store.js').Store, call: import('../wire-types.js').Call }} options
 */
export function createRunsList({ root, store, call }) {
  const $ = (/** @type {string} */ selector) => /** @type {HTMLElement} */ (root.querySelector(selector));
  const list = $('[data-testid="run-list"]');
  const meta = $('[data-testid="history-meta"]');
  const more = /** @type {HTMLButtonElement} */ ($('[data-testid="runs-more"]'));
  const sessionsBox = $('[data-testid="recent-sessions"]');
  const form = /** @type {HTMLFormElement} */ ($('[data-testid="run-filters"]'));
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let refreshTimer;

  /** @returns {RunsListState['filters']} */
  function filters() {
    const data = new FormData(form);
    const sessionId = String(data.get('session') || '').trim();
    const runState = String(data.get('state') || '');
    const outcome = String(data.get('outcome') || '').trim();
    const states = RUN_STATES.includes(runState) ? [/** @type {RunSummary['state']} */ (runState)] : undefined;
    return {
      ...(sessionId ? { sessionId } : {}),
      ...(states ? { states } : {}),
      ...(outcome ? { outcome } : {}),
    };
  }

  /**
   * Loads the first `limit` runs again (after a filter change, or to follow the engine).
   * @param {number} [limit]
   * @param {RunsListState['filters']} [newFilters]
   */
  async function reload(limit = PAGE, newFilters) {
    const generation = store.runsQueryStarted(newFilters, false);
    const query = { ...store.state.runsList.filters, limit: Math.min(500, Math.max(PAGE, limit)) };
    try {
      store.runsPageLoaded(generation, await call('runs.query', query), false);
    } catch (error) {
      store.runsPageFailed(generation, error instanceof Error ? error.message : String(error));
    }
  }

  async function loadOlder() {
    const { cursor, loading, filters } = store.state.runsList;
    if (!cursor || loading) return;
    const generation = store.runsQueryStarted(undefined, true);
    try {
      store.runsPageLoaded(generation, await call('runs.query', { ...filters, limit: PAGE, before: cursor }), true);
    } catch (error) {
      store.runsPageFailed(generation, error instanceof Error ? error.message : String(error));
    }
  }

  function render_() {
    const state = store.state;
    const runsList = state.runsList;
    const selected = state.route.view === 'run' ? state.route.runId : undefined;
    const now = Date.now();
    const scroll = list.scrollTop;
    render(
      runsList.runs.length
        ? repeat(
            runsList.runs,
            (run) => run.runId,
            (run) => runItem(run, now, selected),
          )
        : html`<li class="empty">
            ${
              runsList.loading
                ? 'Loading…'
                : runsList.error
                  ? `Could not list runs: ${runsList.error}`
                  : 'No run matches.'
            }
          </li>`,
      list,
    );
    list.scrollTop = scroll;
    const filtered = Object.keys(runsList.filters).length > 0;
    const count = runsList.runs.length;
    meta.textContent = `${count}${runsList.cursor ? '+' : ''} run${count === 1 && !runsList.cursor ? '' : 's'}${filtered ? ' (filtered)' : ''}`;
    more.hidden = !runsList.cursor;
    more.disabled = runsList.loading;
    const sessions = sessionsOf(runsList);
    render(
      html`${sessions.length ? html`<span class="sessions-title">sessions</span>` : ''}${sessions
        .slice(0, 12)
        .map(
          (sessionId) =>
            html`<a
              class="session-chip"
              href=${links.session(sessionId)}
              title="the story of session ${sessionId}"
              data-testid="session-link"
              data-session=${sessionId}
              >${sessionId}</a
            >`,
        )}`,
      sessionsBox,
    );
    const known = /** @type {HTMLElement} */ (root.querySelector('#known-sessions'));
    render(
      sessions.map((sessionId) => html`<option value=${sessionId}></option>`),
      known,
    );
    const outcomes = /** @type {HTMLElement} */ (root.querySelector('#known-outcomes'));
    const seen = new Set([...KNOWN_OUTCOMES, ...runsList.runs.map((r) => r.outcome ?? '').filter(Boolean)]);
    render(
      [...seen].map((outcome) => html`<option value=${outcome}></option>`),
      outcomes,
    );
  }

  form.addEventListener('input', () => {
    clearTimeout(refreshTimer);
    refreshTimer = setTimeout(() => void reload(PAGE, filters()), 250);
  });
  form.addEventListener('submit', (event) => event.preventDefault());
  more.addEventListener('click', () => void loadOlder());
  // Elapsed times of running runs move on.
  setInterval(() => {
    if (store.state.runsList.runs.some((run) => run.state === 'running')) render_();
  }, 1000);
  setInterval(() => {
    if (!store.state.runsList.loading && document.visibilityState === 'visible')
      void reload(store.state.runsList.runs.length);
  }, REFRESH_EVERY_MS);

  return {
    render: render_,
    reload: () => reload(store.state.runsList.runs.length),
    /**
     * A run was queued, started or ended: the pages shown are refreshed, a little later.
     * @param {RunEvent} event
     */
    onRunEvent(event) {
      if (!FOLLOWED.has(event.type)) return;
      clearTimeout(refreshTimer);
      refreshTimer = setTimeout(() => void reload(store.state.runsList.runs.length), REFRESH_AFTER_MS);
    },
  };
}
