/*
 * The session view: a page of the session's runs (runs.query), each run's log (run.history),
 * merged into the session's story (session-story.js) and drawn as a swimlane (swimlane.js).
 * It follows the session live: new events join the story as they arrive; "older runs" adds
 * the page before.
 */
((inspector) => {
  'use strict';

  const { h, sessionStory, renderSwimlane } = inspector;
  const RUNS_PER_PAGE = 20;
  const SUMMARIES_AFTER_MS = 300;

  function createSessionView({ root, call, links }) {
    const box = root.querySelector('[data-testid="swimlane"]');
    const meta = root.querySelector('[data-testid="session-meta"]');
    const more = root.querySelector('[data-testid="session-more"]');
    let session;
    let summariesTimer;
    let drawn = '';

    async function show(sessionId) {
      if (session && session.sessionId === sessionId) return;
      session = {
        sessionId,
        events: new Map(),
        summaries: new Map(),
        steerArrivals: new Map(),
        cursor: undefined,
        loading: true,
        error: undefined,
      };
      drawn = '';
      render();
      await loadPage();
    }

    function hide() {
      session = undefined;
    }

    /** The next page of the session's runs (the first when none is loaded), with their logs. */
    async function loadPage() {
      const current = session;
      if (!current) return;
      current.loading = true;
      try {
        const page = await call('runs.query', {
          sessionId: current.sessionId,
          limit: RUNS_PER_PAGE,
          ...(current.cursor ? { before: current.cursor } : {}),
        });
        const logs = await Promise.all(page.runs.map((run) => call('run.history', { runId: run.runId })));
        if (session !== current) return;
        page.runs.forEach((run, i) => {
          current.summaries.set(run.runId, run);
          const known = new Map((current.events.get(run.runId) || []).map((event) => [event.seq, event]));
          for (const event of logs[i]) known.set(event.seq, event);
          current.events.set(run.runId, [...known.values()]);
        });
        current.cursor = page.cursor;
        current.error = undefined;
        void loadSteerArrivals(current, logs.flat());
      } catch (error) {
        if (session === current) current.error = error.message;
      } finally {
        if (session === current) current.loading = false;
        render();
      }
    }

    /** When each steered message arrived: its steer record (run.get by the steer's id) has it. */
    async function loadSteerArrivals(current, events) {
      const steerIds = events
        .filter((e) => e.type === 'run.steered' && !current.steerArrivals.has(e.steerId))
        .map((e) => e.steerId);
      const statuses = await Promise.all(steerIds.map((runId) => call('run.get', { runId }).catch(() => undefined)));
      statuses.forEach((status, i) => {
        if (status && status.steer) current.steerArrivals.set(steerIds[i], Date.parse(status.steer.createdAt));
      });
      if (session === current && steerIds.length > 0) render();
    }

    /** Refreshes the rows of runs already shown (their messages, for runs that arrived live). */
    async function loadSummaries() {
      const current = session;
      if (!current) return;
      try {
        const page = await call('runs.query', {
          sessionId: current.sessionId,
          limit: Math.min(500, Math.max(RUNS_PER_PAGE, current.events.size)),
        });
        if (session !== current) return;
        for (const run of page.runs) current.summaries.set(run.runId, run);
        render();
      } catch {
        // Kept as they were; the next event tries again.
      }
    }

    /** A live event: one of this session's joins its story. */
    function onRunEvent(event) {
      if (!session || event.sessionId !== session.sessionId || typeof event.runId !== 'string') return;
      const events = session.events.get(event.runId) || [];
      if (events.some((known) => known.seq === event.seq)) return;
      session.events.set(event.runId, [...events, event]);
      if (event.type === 'run.steered') void loadSteerArrivals(session, [event]);
      if (!session.summaries.has(event.runId)) {
        clearTimeout(summariesTimer);
        summariesTimer = setTimeout(() => void loadSummaries(), SUMMARIES_AFTER_MS);
      }
    }

    function render() {
      if (!session) return;
      const story = sessionStory([...session.events.values()].flat());
      for (const run of story.runs)
        for (const steer of run.steers) steer.arrivedAt = session.steerArrivals.get(steer.steerId);
      const steers = story.runs.reduce((n, run) => n + run.steers.length, 0);
      const count = (kind) => story.links.filter((link) => link.kind === kind).length;
      meta.replaceChildren(
        h('span', { class: 'session-name', dataset: { testid: 'session-name' } }, session.sessionId),
        h(
          'span',
          null,
          `${story.runs.length} run${story.runs.length === 1 ? '' : 's'}${session.cursor ? ' shown' : ''}`,
        ),
        h('span', null, `${steers} steer${steers === 1 ? '' : 's'}`),
        h('span', null, `${count('interrupt')} interrupted`),
        h('span', null, `${count('supersede')} superseded`),
      );
      more.hidden = !session.cursor;
      more.disabled = session.loading;
      const open = story.runs.some((run) => run.endedAt === undefined);
      // Redrawn when the story or the width changed, and every second while a run goes on.
      const signature = JSON.stringify([
        story,
        [...session.summaries.keys()],
        box.clientWidth,
        open ? Math.floor(Date.now() / 1000) : 0,
      ]);
      if (signature === drawn) return;
      drawn = signature;
      if (story.runs.length === 0) {
        box.replaceChildren(
          h(
            'p',
            { class: 'empty' },
            session.loading
              ? 'Loading the session…'
              : session.error
                ? `Could not load the session: ${session.error}`
                : 'No run of this session is stored.',
          ),
        );
        return;
      }
      renderSwimlane(box, story, { summaries: session.summaries, links, now: Date.now() });
    }

    more.addEventListener('click', () => void loadPage());

    return {
      show,
      hide,
      render,
      onRunEvent,
      reload() {
        if (!session) return;
        const sessionId = session.sessionId;
        session = undefined;
        void show(sessionId);
      },
      get sessionId() {
        return session && session.sessionId;
      },
    };
  }

  Object.assign(inspector, { createSessionView });
})((globalThis.SwitchyardInspector ??= {}));
