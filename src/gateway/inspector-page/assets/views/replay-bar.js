// @ts-check
/*
 * The replay of one run: a scrubber over its event log. Where the scrubber stands decides what
 * the rest of the page shows — the run statechart in the state derived from the events so far
 * (run-replay.js), the tool batches as they were at that moment, the event list up to there —
 * so a finished run can be walked through without a live actor. A run still going can be
 * replayed too: at the end, the scrubber follows new events. This view draws the bar and
 * plays the events with their own timing; the scrubber's place is the store's.
 */
import { html, nothing, render } from '../vendor/lit-html/lit-html.js';
import { formatDuration, formatTime, plural, shortId } from '../format.js';
import { links } from '../routes.js';
import { replayAt } from '../selectors.js';

/** @typedef {import('../wire-types.js').RunStatus} RunStatus */
/** @typedef {import('../store.js').ReplayState['status']} Status */

const MAX_PAUSE_MS = 800;
const MIN_PAUSE_MS = 60;

/**
 * What is known of the run: its session, outcome, start, duration, turns and tool calls.
 * @param {string} runId
 * @param {Status} status
 */
function head(runId, status) {
  const run = status && 'state' in status ? status : undefined;
  const outcome = run ? (run.error ? run.error.code : run.reason || run.state) : undefined;
  const failed = status && 'error' in status && !run ? status.error : undefined;
  return html`<span class="replay-title">Replay</span
    ><span class="chart-actor" title=${runId}>${shortId(runId)}</span>${
      run && run.sessionId
        ? html`<a class="session-chip" href=${links.session(run.sessionId)} data-testid="replay-session"
            >session ${run.sessionId}</a
          >`
        : nothing
    }${run && outcome ? html`<span class="pill outcome outcome-${run.state}">${outcome}</span>` : nothing}${
      run && run.startedAt ? html`<span class="replay-fact">started ${formatTime(run.startedAt)}</span>` : nothing
    }${
      run && run.startedAt && run.endedAt
        ? html`<span class="replay-fact">${formatDuration(Date.parse(run.endedAt) - Date.parse(run.startedAt))}</span>`
        : nothing
    }${
      run && run.turns !== undefined
        ? html`<span class="replay-fact">${plural(run.turns, 'turn', 'turns')}</span>`
        : nothing
    }${
      run && run.toolCalls !== undefined
        ? html`<span class="replay-fact">${plural(run.toolCalls, 'tool call', 'tool calls')}</span>`
        : nothing
    }${failed ? html`<span class="replay-fact error">could not load the run: ${failed}</span>` : nothing}`;
}

/**
 * @param {{ root: HTMLElement, store: import('../store.js').Store, call: import('../wire-types.js').Call }} options
 */
export function createReplayBar({ root, store, call }) {
  const scrubber = /** @type {HTMLInputElement} */ (root.querySelector('[data-testid="replay-scrubber"]'));
  const headBox = /** @type {HTMLElement} */ (root.querySelector('[data-testid="replay-head"]'));
  const at = /** @type {HTMLElement} */ (root.querySelector('[data-testid="replay-at"]'));
  const play = /** @type {HTMLElement} */ (root.querySelector('[data-testid="replay-play"]'));
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;

  /** @param {number} index */
  function seek(index) {
    stop();
    const replay = replayAt(store.state);
    if (replay) store.replaySeek(index, replay.events.length);
  }

  function stop() {
    clearTimeout(timer);
    timer = undefined;
    store.replayPlaying(false);
  }

  /** Plays from the scrubber on, each event after the pause it had (capped), to the end. */
  function start() {
    const first = replayAt(store.state);
    if (!first || first.events.length === 0) return;
    if (first.index >= first.events.length) store.replaySeek(0, first.events.length);
    const runId = first.runId;
    store.replayPlaying(true);
    const step = () => {
      const replay = replayAt(store.state);
      if (!replay || replay.runId !== runId || !replay.playing || replay.index >= replay.events.length) return stop();
      const previous = replay.events[replay.index - 1];
      const next = replay.events[replay.index];
      const pause =
        previous && next
          ? Math.min(MAX_PAUSE_MS, Math.max(MIN_PAUSE_MS, Date.parse(next.at) - Date.parse(previous.at)))
          : MIN_PAUSE_MS;
      timer = setTimeout(() => {
        const now = replayAt(store.state);
        if (!now || now.runId !== runId) return stop();
        store.replaySeek(now.index + 1, now.events.length);
        step();
      }, pause);
    };
    step();
  }

  const toggle = () => (store.state.replay?.playing ? stop() : start());
  /** @param {number} by */
  const move = (by) => seek((replayAt(store.state)?.index ?? 0) + by);
  const end = () => seek(replayAt(store.state)?.events.length ?? 0);
  /** @type {Record<string, () => void>} */
  const steps = { first: () => seek(0), back: () => move(-1), forward: () => move(1), last: end, play: toggle };
  /** @type {Record<string, () => void>} */
  const keys = { ArrowLeft: () => move(-1), ArrowRight: () => move(1), Home: () => seek(0), End: end, ' ': toggle };

  scrubber.addEventListener('input', () => seek(Number(scrubber.value)));
  root.addEventListener('click', (event) => {
    const button = /** @type {Element} */ (event.target).closest('[data-step]');
    const step = button instanceof HTMLElement ? steps[button.dataset['step'] ?? ''] : undefined;
    if (step && store.state.replay) step();
  });

  return {
    /** Reads the run's record (run.get) for the bar's head. */
    async loadStatus() {
      const runId = store.state.replay?.runId;
      if (!runId) return;
      try {
        store.replayStatusLoaded(runId, await call('run.get', { runId }));
      } catch (error) {
        store.replayStatusLoaded(runId, { error: error instanceof Error ? error.message : String(error) });
      }
    },
    /**
     * The replay's keys: ← →, Home, End, space. True when the key was one of them.
     * @param {KeyboardEvent} event
     */
    key(event) {
      const act = store.state.replay ? keys[event.key] : undefined;
      if (act) act();
      return act !== undefined;
    },
    render() {
      const replay = replayAt(store.state);
      if (!replay) {
        if (timer) stop();
        return;
      }
      const { events, index } = replay;
      scrubber.max = String(events.length);
      scrubber.value = String(index);
      play.textContent = replay.playing ? '❚❚' : '▶';
      play.setAttribute('aria-label', replay.playing ? 'pause' : 'play');
      const current = events[index - 1];
      const t0 = events[0] ? Date.parse(events[0].at) : 0;
      at.dataset['index'] = String(index);
      at.dataset['state'] = replay.path;
      at.textContent = current
        ? `event ${index} of ${events.length} · ${current.type} · +${formatDuration(Date.parse(current.at) - t0)}`
        : `before the first of ${events.length} events`;
      render(head(replay.runId, replay.status), headBox);
    },
  };
}
