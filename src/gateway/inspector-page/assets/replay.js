/*
 * The replay of one run: a scrubber over its event log. Where the scrubber stands decides what
 * the rest of the page shows — the run statechart in the state derived from the events so far
 * (run-replay.js), the tool batches as they were at that moment, the event list up to there —
 * so a finished run can be walked through without a live actor. A run still going can be
 * replayed too: at the end, the scrubber follows new events.
 */
((inspector) => {
  'use strict';

  const { h, shortId, formatDuration, formatTime, runStatePaths, stateValueOf, RUN_STATE_BEFORE_EVENTS } = inspector;
  const MAX_PAUSE_MS = 800;
  const MIN_PAUSE_MS = 60;

  /** `root` is the replay bar; `call` asks the gateway; `links` gives addresses; `changed` redraws the page. */
  function createReplay({ root, call, links, changed }) {
    const scrubber = root.querySelector('[data-testid="replay-scrubber"]');
    const head = root.querySelector('[data-testid="replay-head"]');
    const at = root.querySelector('[data-testid="replay-at"]');
    const play = root.querySelector('[data-testid="replay-play"]');
    let replay;

    function open(runId) {
      if (replay && replay.runId === runId) return;
      stop();
      replay = { runId, index: 0, following: true, playing: undefined, status: undefined, events: [], paths: [] };
      void loadStatus();
    }

    function close() {
      stop();
      replay = undefined;
    }

    async function loadStatus() {
      if (!replay) return;
      const runId = replay.runId;
      try {
        const status = await call('run.get', { runId });
        if (replay && replay.runId === runId) replay.status = status;
      } catch (error) {
        if (replay && replay.runId === runId) replay.status = { error: error.message };
      }
      changed();
    }

    /** The run's events, in seq order, as the page has them now. */
    function update(events) {
      if (!replay) return;
      if (events.length !== replay.events.length) {
        replay.events = events;
        replay.paths = runStatePaths(events);
        if (replay.following) replay.index = events.length;
      }
      render();
    }

    function seek(index, keepPlaying = false) {
      if (!replay) return;
      if (!keepPlaying) stop();
      replay.index = Math.max(0, Math.min(replay.events.length, index));
      replay.following = replay.index === replay.events.length;
      changed();
    }

    /** Plays from the scrubber on, each event after the pause it had (capped), to the end. */
    function start() {
      if (!replay || replay.events.length === 0) return;
      if (replay.index >= replay.events.length) seek(0);
      const step = () => {
        if (!replay || replay.index >= replay.events.length) return stop();
        const previous = replay.events[replay.index - 1];
        const next = replay.events[replay.index];
        const pause = previous
          ? Math.min(MAX_PAUSE_MS, Math.max(MIN_PAUSE_MS, Date.parse(next.at) - Date.parse(previous.at)))
          : MIN_PAUSE_MS;
        replay.playing = setTimeout(() => {
          seek(replay.index + 1, true);
          step();
        }, pause);
      };
      replay.playing = true;
      step();
      render();
    }

    function stop() {
      if (!replay || replay.playing === undefined) return;
      if (replay.playing !== true) clearTimeout(replay.playing);
      replay.playing = undefined;
      render();
    }

    function statePath() {
      return replay.index === 0 ? RUN_STATE_BEFORE_EVENTS : replay.paths[replay.index - 1];
    }

    /** The run's actor as it was at the scrubber: what the statechart lights up. */
    function actor() {
      const path = statePath();
      const ended = path === 'completed' || path === 'cancelled' || path === 'failed';
      return {
        id: `run:${replay.runId}`,
        machineId: 'run',
        value: stateValueOf(path),
        status: ended ? 'done' : 'active',
        context: undefined,
      };
    }

    /** The time the scrubber stands at (the current event's). */
    function time() {
      const event = replay.events[replay.index - 1] || replay.events[0];
      return event ? Date.parse(event.at) : undefined;
    }

    function render() {
      if (!replay) return;
      const { events, index, status } = replay;
      scrubber.max = String(events.length);
      scrubber.value = String(index);
      play.textContent = replay.playing === undefined ? '▶' : '❚❚';
      play.setAttribute('aria-label', replay.playing === undefined ? 'play' : 'pause');
      const current = events[index - 1];
      const t0 = events.length ? Date.parse(events[0].at) : 0;
      at.dataset.index = String(index);
      at.dataset.state = statePath();
      at.textContent = current
        ? `event ${index} of ${events.length} · ${current.type} · +${formatDuration(Date.parse(current.at) - t0)}`
        : `before the first of ${events.length} events`;
      const outcome =
        status && status.state ? (status.error ? status.error.code : status.reason || status.state) : undefined;
      const signature = JSON.stringify([replay.runId, status]);
      if (head.dataset.signature === signature) return;
      head.dataset.signature = signature;
      const facts = [
        h('span', { class: 'replay-title' }, 'Replay'),
        h('span', { class: 'chart-actor', title: replay.runId }, shortId(replay.runId)),
        status && status.sessionId
          ? h(
              'a',
              { class: 'session-chip', href: links.session(status.sessionId), dataset: { testid: 'replay-session' } },
              `session ${status.sessionId}`,
            )
          : null,
        outcome ? h('span', { class: `pill outcome outcome-${status.state}` }, outcome) : null,
        status && status.startedAt
          ? h('span', { class: 'replay-fact' }, `started ${formatTime(status.startedAt)}`)
          : null,
        status && status.startedAt && status.endedAt
          ? h(
              'span',
              { class: 'replay-fact' },
              formatDuration(Date.parse(status.endedAt) - Date.parse(status.startedAt)),
            )
          : null,
        status && status.turns !== undefined
          ? h('span', { class: 'replay-fact' }, `${status.turns} turn${status.turns === 1 ? '' : 's'}`)
          : null,
        status && status.toolCalls !== undefined
          ? h('span', { class: 'replay-fact' }, `${status.toolCalls} tool call${status.toolCalls === 1 ? '' : 's'}`)
          : null,
        status && status.error && !status.state
          ? h('span', { class: 'replay-fact error' }, `could not load the run: ${status.error}`)
          : null,
      ];
      head.replaceChildren(...facts.filter(Boolean));
    }

    scrubber.addEventListener('input', () => seek(Number(scrubber.value)));
    root.addEventListener('click', (event) => {
      const button = event.target.closest('[data-step]');
      if (!button || !replay) return;
      const steps = {
        first: () => seek(0),
        back: () => seek(replay.index - 1),
        forward: () => seek(replay.index + 1),
        last: () => seek(replay.events.length),
        play: () => (replay.playing === undefined ? start() : stop()),
      };
      steps[button.dataset.step]();
    });

    return {
      open,
      close,
      update,
      seek,
      actor,
      time,
      get active() {
        return replay !== undefined;
      },
      get runId() {
        return replay && replay.runId;
      },
      get index() {
        return replay ? replay.index : undefined;
      },
      /** Keys of the replay: ← →, Home, End, space. */
      key(event) {
        if (!replay) return false;
        const keys = {
          ArrowLeft: () => seek(replay.index - 1),
          ArrowRight: () => seek(replay.index + 1),
          Home: () => seek(0),
          End: () => seek(replay.events.length),
          ' ': () => (replay.playing === undefined ? start() : stop()),
        };
        const act = keys[event.key];
        if (!act) return false;
        act();
        return true;
      },
      reloadStatus: loadStatus,
    };
  }

  Object.assign(inspector, { createReplay });
})((globalThis.SwitchyardInspector ??= {}));
