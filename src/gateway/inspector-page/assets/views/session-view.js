// @ts-check
/*
 * The session view: a page of the session's runs (runs.query), each run's log (run.history),
 * merged into the session's story (session-story.js) and drawn as a swimlane (swimlane.js).
 * It follows the session live: new events join the story as they arrive (the store adds
 * them); "older runs" adds the page before.
 */
import { html, render } from '../vendor/lit-html/lit-html.js';
import { plural } from '../format.js';
import { links } from '../routes.js';
import { sessionStory } from '../session-story.js';
import { swimlane } from './swimlane.js';

/** @typedef {import('../store.js').SessionState} SessionState */
/** @typedef {import('../wire-types.js').RunEvent} RunEvent */

const RUNS_PER_PAGE = 20;
const SUMMARIES_AFTER_MS = 300;

/** @param {unknown} error */
const messageOf = (error) => (error instanceof Error ? error.message : String(error));

/**
 * @param {{ root: HTMLElement, store: import('../store.js').Store, call: import('../wire-types.js').Call }} options
 */
export function createSessionView({ root, store, call }) {
  const box = /** @type {HTMLElement} */ (root.querySelector('[data-testid="swimlane"]'));
  const meta = /** @type {HTMLElement} */ (root.querySelector('[data-testid="session-meta"]'));
  const more = /** @type {HTMLButtonElement} */ (root.querySelector('[data-testid="session-more"]'));
  box.replaceChildren();
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let summariesTimer;
  /** What the swimlane was drawn from last. */
  let drawn = '';

  /** The next page of the session's runs (the first when none is loaded), with their logs. */
  async function loadPage() {
    const session = store.state.session;
    if (!session) return;
    store.sessionPageStarted(session);
    try {
      const page = await call('runs.query', {
        sessionId: session.sessionId,
        limit: RUNS_PER_PAGE,
        ...(session.cursor ? { before: session.cursor } : {}),
      });
      const logs = await Promise.all(page.runs.map((run) => call('run.history', { runId: run.runId })));
      store.sessionPageLoaded(session, page, logs);
      void loadSteerArrivals(session, logs.flat());
    } catch (error) {
      store.sessionPageFailed(session, messageOf(error));
    }
  }

  /**
   * When each steered message arrived: its steer record (run.get by the steer's id) has it.
   * @param {SessionState} session
   * @param {RunEvent[]} events
   */
  async function loadSteerArrivals(session, events) {
    const steerIds = events.flatMap((e) =>
      e.type === 'run.steered' && !session.steerArrivals.has(e.steerId) ? [e.steerId] : [],
    );
    const statuses = await Promise.all(steerIds.map((runId) => call('run.get', { runId }).catch(() => undefined)));
    /** @type {Map<string, number>} */
    const arrivals = new Map();
    statuses.forEach((status, i) => {
      const steerId = steerIds[i];
      if (status && status.steer && steerId) arrivals.set(steerId, Date.parse(status.steer.createdAt));
    });
    store.steerArrivalsRead(session, arrivals);
  }

  /** Refreshes the rows of runs already shown (their messages, for runs that arrived live). */
  async function loadSummaries() {
    const session = store.state.session;
    if (!session) return;
    try {
      const page = await call('runs.query', {
        sessionId: session.sessionId,
        limit: Math.min(500, Math.max(RUNS_PER_PAGE, session.events.size)),
      });
      store.sessionSummariesRead(session, page.runs);
    } catch {
      // Kept as they were; the next event tries again.
    }
  }

  more.addEventListener('click', () => void loadPage());

  return {
    /**
     * A live event: the store has added it to the story; a steer's arrival and a new run's row are read.
     * @param {RunEvent} event
     */
    onRunEvent(event) {
      const session = store.state.session;
      if (!session || event.sessionId !== session.sessionId) return;
      if (event.type === 'run.steered') void loadSteerArrivals(session, [event]);
      if (!session.summaries.has(event.runId)) {
        clearTimeout(summariesTimer);
        summariesTimer = setTimeout(() => void loadSummaries(), SUMMARIES_AFTER_MS);
      }
    },
    /** Reads the first page of a session just opened (or started over). */
    loadPage,
    render() {
      const session = store.state.session;
      if (!session) return;
      const story = sessionStory([...session.events.values()].flat());
      for (const run of story.runs)
        for (const steer of run.steers) steer.arrivedAt = session.steerArrivals.get(steer.steerId);
      const steers = story.runs.reduce((n, run) => n + run.steers.length, 0);
      /** @param {string} kind */
      const count = (kind) => story.links.filter((link) => link.kind === kind).length;
      render(
        html`<span class="session-name" data-testid="session-name">${session.sessionId}</span
          ><span>${plural(story.runs.length, 'run', 'runs')}${session.cursor ? ' shown' : ''}</span
          ><span>${plural(steers, 'steer', 'steers')}</span><span>${count('interrupt')} interrupted</span
          ><span>${count('supersede')} superseded</span>`,
        meta,
      );
      more.hidden = !session.cursor;
      more.disabled = session.loading;
      const open = story.runs.some((run) => run.endedAt === undefined);
      // Drawn again when the story or the width changed, and every second while a run goes on.
      const signature = JSON.stringify([
        story,
        [...session.summaries.keys()],
        box.clientWidth,
        open ? Math.floor(Date.now() / 1000) : 0,
        session.loading,
        session.error,
      ]);
      if (signature === drawn) return;
      drawn = signature;
      render(
        story.runs.length
          ? swimlane(story, { summaries: session.summaries, width: box.clientWidth, now: Date.now(), links })
          : html`<p class="empty">
              ${
                session.loading
                  ? 'Loading the session…'
                  : session.error
                    ? `Could not load the session: ${session.error}`
                    : 'No run of this session is stored.'
              }
            </p>`,
        box,
      );
    },
  };
}
