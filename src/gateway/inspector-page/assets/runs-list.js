/*
 * The runs list: the stored runs newest first (`runs.query`, docs/protocol.md), a page at a
 * time, filtered by session, state and outcome, and the sessions they belong to. It follows
 * the engine: a run that is queued, starts or ends refreshes the pages already shown (and
 * they are read again every few seconds, for the runs of other processes of a cluster). Each
 * run links to its replay (/inspect/run/<runId>), each session to its story.
 */
((inspector) => {
  'use strict';

  const { h, shortId, formatDuration, formatTime } = inspector;
  const PAGE = 40;
  const REFRESH_AFTER_MS = 300;
  /** Runs of other processes of a cluster send this page no events: the pages shown are read again this often. */
  const REFRESH_EVERY_MS = 5000;
  const TERMINAL = new Set(['run.completed', 'run.failed', 'run.cancelled']);
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

  /** How long a run took (or has taken so far): from its start, or for one that never started, from its message. */
  function durationOf(run, now) {
    const from = Date.parse(run.startedAt || run.createdAt);
    const to = run.endedAt ? Date.parse(run.endedAt) : now;
    return Math.max(0, to - from);
  }

  function countText(n, one, many) {
    return n === undefined ? undefined : `${n} ${n === 1 ? one : many}`;
  }

  /** `links.run(id)` / `links.session(id)` give the page's addresses; `call(method, params)` asks the gateway. */
  function createRunsList({ root, call, links }) {
    const list = root.querySelector('[data-testid="run-list"]');
    const meta = root.querySelector('[data-testid="history-meta"]');
    const more = root.querySelector('[data-testid="runs-more"]');
    const sessionsBox = root.querySelector('[data-testid="recent-sessions"]');
    const form = root.querySelector('[data-testid="run-filters"]');
    const state = {
      runs: [],
      cursor: undefined,
      loading: false,
      error: undefined,
      selected: undefined,
      filters: {},
      generation: 0,
    };
    let refreshTimer;

    function filters() {
      const data = new FormData(form);
      const sessionId = String(data.get('session') || '').trim();
      const runState = String(data.get('state') || '');
      const outcome = String(data.get('outcome') || '').trim();
      return {
        ...(sessionId ? { sessionId } : {}),
        ...(runState ? { states: [runState] } : {}),
        ...(outcome ? { outcome } : {}),
      };
    }

    /** Loads the first `limit` runs again (after a filter change, or to follow the engine). */
    async function reload(limit = PAGE) {
      const generation = ++state.generation;
      state.loading = true;
      try {
        const page = await call('runs.query', { ...state.filters, limit: Math.min(500, Math.max(PAGE, limit)) });
        if (generation !== state.generation) return;
        state.runs = page.runs;
        state.cursor = page.cursor;
        state.error = undefined;
      } catch (error) {
        if (generation === state.generation) state.error = error.message;
      } finally {
        if (generation === state.generation) state.loading = false;
        render();
      }
    }

    async function loadOlder() {
      if (!state.cursor || state.loading) return;
      const generation = state.generation;
      state.loading = true;
      render();
      try {
        const page = await call('runs.query', { ...state.filters, limit: PAGE, before: state.cursor });
        if (generation !== state.generation) return;
        state.runs = [...state.runs, ...page.runs];
        state.cursor = page.cursor;
      } catch (error) {
        state.error = error.message;
      } finally {
        state.loading = false;
        render();
      }
    }

    function runItem(run, now) {
      const outcome = run.outcome || run.state;
      const details = [
        run.startedAt ? `started ${formatTime(run.startedAt)}` : `sent ${formatTime(run.createdAt)}`,
        formatDuration(durationOf(run, now)),
        countText(run.turns, 'turn', 'turns'),
        countText(run.toolCalls, 'tool call', 'tool calls'),
      ].filter(Boolean);
      return h(
        'li',
        { class: `run-item state-${run.state}${run.runId === state.selected ? ' selected' : ''}` },
        h(
          'a',
          {
            class: 'run-link',
            href: links.run(run.runId),
            title: `${run.runId} · ${run.state}${run.outcome ? ` (${run.outcome})` : ''}`,
            dataset: {
              testid: 'run-item',
              runId: run.runId,
              session: run.sessionId,
              state: run.state,
              outcome: run.outcome || '',
            },
          },
          h(
            'span',
            { class: 'run-line' },
            h('span', { class: 'dot', 'aria-hidden': 'true' }),
            h('span', { class: 'run-id' }, shortId(run.runId)),
            h('span', { class: 'run-session' }, run.sessionId),
            h('span', { class: `pill outcome outcome-${run.state}` }, outcome),
          ),
          h('span', { class: 'run-input' }, run.input || '—'),
          h('span', { class: 'run-details', dataset: { testid: 'run-details' } }, details.join(' · ')),
        ),
      );
    }

    /** Sessions of the runs shown, the most recently active first. */
    function renderSessions() {
      const sessions = [];
      for (const run of state.runs) if (!sessions.includes(run.sessionId)) sessions.push(run.sessionId);
      sessionsBox.replaceChildren(
        ...(sessions.length ? [h('span', { class: 'sessions-title' }, 'sessions')] : []),
        ...sessions.slice(0, 12).map((sessionId) =>
          h(
            'a',
            {
              class: 'session-chip',
              href: links.session(sessionId),
              title: `the story of session ${sessionId}`,
              dataset: { testid: 'session-link', session: sessionId },
            },
            sessionId,
          ),
        ),
      );
      const known = root.querySelector('#known-sessions');
      known.replaceChildren(...sessions.map((sessionId) => h('option', { value: sessionId })));
      const outcomes = root.querySelector('#known-outcomes');
      const seen = new Set([...KNOWN_OUTCOMES, ...state.runs.map((r) => r.outcome).filter(Boolean)]);
      outcomes.replaceChildren(...[...seen].map((outcome) => h('option', { value: outcome })));
    }

    function render() {
      const now = Date.now();
      const scroll = list.scrollTop;
      list.replaceChildren(
        ...(state.runs.length
          ? state.runs.map((run) => runItem(run, now))
          : [
              h(
                'li',
                { class: 'empty' },
                state.loading ? 'Loading…' : state.error ? `Could not list runs: ${state.error}` : 'No run matches.',
              ),
            ]),
      );
      list.scrollTop = scroll;
      const filtered = Object.keys(state.filters).length > 0;
      meta.textContent = `${state.runs.length}${state.cursor ? '+' : ''} run${state.runs.length === 1 && !state.cursor ? '' : 's'}${filtered ? ' (filtered)' : ''}`;
      more.hidden = !state.cursor;
      more.disabled = state.loading;
      renderSessions();
    }

    form.addEventListener('input', () => {
      clearTimeout(refreshTimer);
      refreshTimer = setTimeout(() => {
        state.filters = filters();
        void reload();
      }, 250);
    });
    form.addEventListener('submit', (event) => event.preventDefault());
    more.addEventListener('click', () => void loadOlder());
    // Elapsed times of running runs move on.
    setInterval(() => {
      if (state.runs.some((run) => run.state === 'running')) render();
    }, 1000);
    setInterval(() => {
      if (!state.loading && document.visibilityState === 'visible') void reload(state.runs.length);
    }, REFRESH_EVERY_MS);

    return {
      reload: () => reload(state.runs.length),
      /** A run was queued, started or ended: the pages shown are refreshed, a little later. */
      onRunEvent(event) {
        if (event.type !== 'run.queued' && event.type !== 'run.started' && !TERMINAL.has(event.type)) return;
        clearTimeout(refreshTimer);
        refreshTimer = setTimeout(() => void reload(state.runs.length), REFRESH_AFTER_MS);
      },
      select(runId) {
        state.selected = runId;
        render();
      },
      /** Shows one session's runs (or, with undefined, all). */
      filterSession(sessionId) {
        const input = form.querySelector('[name="session"]');
        if ((input.value || undefined) === sessionId) return;
        input.value = sessionId || '';
        state.filters = filters();
        void reload();
      },
    };
  }

  Object.assign(inspector, { createRunsList, durationOf });
})((globalThis.SwitchyardInspector ??= {}));
