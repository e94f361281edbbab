// @ts-check
/*
 * The page's state, and the only code that writes it. Views read `store.state` and change it
 * through the actions below; every action tells the subscribers (the page draws once per
 * animation frame, however many actions a frame saw). The state holds what the gateway said
 * (live actors, runs and their events, the engine's figures, the statecharts) and what the
 * user chose (the address, the selected actor, the replay's scrubber).
 */

/** @typedef {import('./wire-types.js').RunEvent} RunEvent */
/** @typedef {import('./wire-types.js').InspectionEvent} InspectionEvent */
/** @typedef {import('./wire-types.js').InspectionSnapshot} InspectionSnapshot */
/** @typedef {import('./wire-types.js').EngineSnapshot} EngineSnapshot */
/** @typedef {import('./wire-types.js').RunStatus} RunStatus */
/** @typedef {import('./wire-types.js').StatechartEntry} StatechartEntry */
/** @typedef {import('./wire-types.js').RunPage} RunPage */
/** @typedef {import('./wire-types.js').RunSummary} RunSummary */
/** @typedef {import('./rpc-client.js').ConnectionState} ConnectionState */
/** @typedef {import('./state-types.js').Actor} Actor */
/** @typedef {import('./state-types.js').KnownRun} KnownRun */
/** @typedef {import('./state-types.js').Route} Route */
/** @typedef {import('./state-types.js').ReplayState} ReplayState */
/** @typedef {import('./state-types.js').Tab} Tab */
/** @typedef {import('./state-types.js').RunsListState} RunsListState */
/** @typedef {import('./state-types.js').SessionState} SessionState */

const FINISHED_RUNS_KEPT = 12;
const EVENTS_KEPT_PER_RUN = 2000;
const TERMINAL = new Set(['run.completed', 'run.failed', 'run.cancelled']);

/**
 * The run an actor belongs to ('run:<id>/…'), if any.
 * @param {string} actorId
 */
export function runIdOfActor(actorId) {
  const root = actorId.split('/')[0] ?? '';
  return root.startsWith('run:') ? root.slice(4) : undefined;
}

/**
 * An actor's context after a snapshot: a whole one replaces it; otherwise the keys that
 * changed are merged in and the removed ones dropped (docs/inspector.md, "Live actors").
 * @param {Record<string, unknown> | undefined} context
 * @param {InspectionSnapshot} snapshot
 * @returns {Record<string, unknown> | undefined}
 */
export function contextAfter(context, snapshot) {
  if (snapshot.context) return snapshot.context;
  if (!snapshot.contextChanges && !snapshot.contextRemoved) return context;
  // Spread defines own properties: a "__proto__" key stays a key.
  const next = { ...context, ...snapshot.contextChanges };
  for (const key of snapshot.contextRemoved || []) delete next[key];
  return next;
}

function initialState() {
  return {
    /** @type {Map<string, StatechartEntry>} machineId -> its statechart */
    machines: new Map(),
    /** @type {Map<string, Actor>} */
    actors: new Map(),
    /** @type {Map<string, KnownRun>} */
    runs: new Map(),
    nextOrder: 1,
    /** @type {string | undefined} */
    selectedActorId: undefined,
    /** The newest run is selected as soon as it appears. */
    follow: true,
    /** @type {EngineSnapshot | undefined} */
    snapshot: undefined,
    snapshotAt: 0,
    /** @type {{ state: ConnectionState, text: string }} */
    connection: { state: 'connecting', text: 'connecting…' },
    /** @type {Route} the address says which view */
    route: /** @type {Route} */ ({ view: 'live' }),
    /** @type {Tab} */
    tab: /** @type {Tab} */ ('live'),
    /** The sidebar's tab was picked by hand: it is no longer switched for the user. */
    tabChosen: false,
    /** The sidebar's tab was set from a snapshot once. */
    tabSet: false,
    /** @type {ReplayState | undefined} */
    replay: undefined,
    /** @type {RunsListState} */
    runsList: { runs: [], cursor: undefined, loading: false, error: undefined, filters: {}, generation: 0 },
    /** @type {SessionState | undefined} */
    session: undefined,
  };
}

/** @typedef {ReturnType<typeof initialState>} State */

export function createStore() {
  const state = initialState();
  /** @type {Set<() => void>} */
  const listeners = new Set();
  const changed = () => {
    for (const listener of listeners) listener();
  };

  /** @param {string} runId */
  function ensureRun(runId) {
    let run = state.runs.get(runId);
    if (!run) {
      run = {
        runId,
        sessionId: undefined,
        events: new Map(),
        order: state.nextOrder++,
        startedOrder: 0,
        terminal: false,
        historyLoaded: false,
      };
      state.runs.set(runId, run);
    }
    return run;
  }

  /**
   * @param {string} actorId
   * @param {Partial<Actor>} fields
   */
  function ensureActor(actorId, fields) {
    let actor = state.actors.get(actorId);
    if (!actor) {
      actor = { id: actorId, status: 'active', order: state.nextOrder++, seenAt: 0 };
      state.actors.set(actorId, actor);
    }
    Object.assign(actor, fields);
    actor.seenAt = performance.now();
    return actor;
  }

  /** @param {string} sessionId */
  function openSession(sessionId) {
    state.session = {
      sessionId,
      events: new Map(),
      summaries: new Map(),
      steerArrivals: new Map(),
      cursor: undefined,
      loading: true,
      error: undefined,
    };
  }

  /**
   * One of the shown session's events joins its story; false when it is not of that session or known.
   * @param {RunEvent} event
   */
  function addSessionEvent(event) {
    const session = state.session;
    if (!session || event.sessionId !== session.sessionId) return;
    const events = session.events.get(event.runId) || [];
    if (events.some((known) => known.seq === event.seq)) return;
    session.events.set(event.runId, [...events, event]);
  }

  /** @param {RunEvent} event */
  function addRunEvent(event) {
    const run = ensureRun(event.runId);
    run.sessionId = event.sessionId;
    run.events.set(event.seq, event);
    if (run.events.size > EVENTS_KEPT_PER_RUN) {
      const oldest = run.events.keys().next();
      if (!oldest.done) run.events.delete(oldest.value);
    }
    if (TERMINAL.has(event.type)) run.terminal = true;
  }

  const actions = {
    /** @param {(() => void)} listener */
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },

    /** @param {StatechartEntry[]} machines */
    machinesLoaded(machines) {
      for (const machine of machines) state.machines.set(machine.machineId, machine);
      changed();
    },

    /**
     * @param {ConnectionState} connection
     * @param {string} text
     */
    connectionChanged(connection, text) {
      state.connection = { state: connection, text };
      changed();
    },

    /** @param {InspectionEvent} event an XState inspection event of `inspect.subscribe` */
    inspected(event) {
      // Async work (a model turn, a tool execution, an approval wait) has no statechart: it is
      // shown under the actor that asked for it while it runs, and gone once it ended.
      if (!event.machineId) {
        if (!event.snapshot || !event.parentId) return;
        if (event.snapshot.status === 'active') {
          const work = ensureActor(event.actorId, { parentId: event.parentId });
          work.status = 'active';
        } else if (!state.actors.delete(event.actorId)) return;
        changed();
        return;
      }
      const actor = ensureActor(event.actorId, { parentId: event.parentId, machineId: event.machineId });
      const snapshot = event.snapshot;
      if (snapshot && event.type !== '@xstate.microstep') {
        if (snapshot.value !== undefined) actor.value = snapshot.value;
        actor.status = snapshot.status || actor.status;
        actor.context = contextAfter(actor.context, snapshot);
      }
      const runId = runIdOfActor(actor.id);
      if (runId !== undefined && actor.machineId === 'run') {
        const run = ensureRun(runId);
        if (!run.startedOrder) {
          // The run has an actor now (it left the wait lane): the one to follow.
          run.startedOrder = state.nextOrder++;
          if (state.follow) state.selectedActorId = actor.id;
        }
        const sessionId = actor.context && actor.context['sessionId'];
        if (typeof sessionId === 'string') run.sessionId = sessionId;
        if (actor.status !== 'active') run.terminal = true;
      }
      changed();
    },

    /** @param {RunEvent[]} events events of runs, live or from a run's history */
    runEventsArrived(events) {
      for (const event of events) {
        addRunEvent(event);
        addSessionEvent(event);
      }
      if (events.length) changed();
    },

    /**
     * Marks the run's history as asked for; false when it was already.
     * @param {string} runId
     */
    historyRequested(runId) {
      const run = ensureRun(runId);
      if (run.historyLoaded) return false;
      run.historyLoaded = true;
      return true;
    },

    /**
     * The history could not be read (not connected): asked for again later. Nothing to redraw.
     * @param {string} runId
     */
    historyFailed(runId) {
      const run = state.runs.get(runId);
      if (run) run.historyLoaded = false;
    },

    /**
     * @param {EngineSnapshot} snapshot
     * @param {number} requestedAt performance.now() when it was asked for
     */
    snapshotRead(snapshot, requestedAt) {
      state.snapshot = snapshot;
      state.snapshotAt = requestedAt;
      for (const session of snapshot.sessions) {
        const id = `session:${session.sessionId}`;
        if (!state.actors.has(id))
          ensureActor(id, { machineId: 'session', value: session.activeRunId ? 'busy' : 'idle' });
      }
      // Until someone picks a tab: a page opened while nothing runs shows what ran before; once
      // something runs, the live actors (and they stay, so a run that ends is still in view).
      const busy = snapshot.running.length + snapshot.waiting > 0;
      if (!state.tabChosen && state.route.view === 'live' && (busy || !state.tabSet))
        state.tab = busy ? 'live' : 'history';
      state.tabSet = true;
      changed();
    },

    /**
     * The user picked an actor: following the newest run stops.
     * @param {string} actorId
     */
    actorSelected(actorId) {
      state.selectedActorId = actorId;
      state.follow = false;
      changed();
    },

    /** @param {boolean} follow */
    followChanged(follow) {
      state.follow = follow;
      if (follow) {
        const latest = latestRunId(state);
        state.selectedActorId = latest ? `run:${latest}` : undefined;
      }
      changed();
    },

    /** @param {Route} route */
    routeChanged(route) {
      state.route = route;
      if (route.view === 'run') {
        ensureRun(route.runId);
        if (!state.replay || state.replay.runId !== route.runId)
          state.replay = { runId: route.runId, index: 0, following: true, playing: false, status: undefined };
      } else {
        state.replay = undefined;
      }
      if (route.view === 'session') {
        if (!state.session || state.session.sessionId !== route.sessionId) openSession(route.sessionId);
      } else {
        state.session = undefined;
      }
      if (route.view !== 'live') state.tab = 'history';
      changed();
    },

    /** @param {Tab} tab */
    tabChosen(tab) {
      state.tabChosen = true;
      state.tab = tab;
      changed();
    },

    /**
     * @param {string} runId
     * @param {RunStatus | { error: string }} status
     */
    replayStatusLoaded(runId, status) {
      if (!state.replay || state.replay.runId !== runId) return;
      state.replay.status = status;
      changed();
    },

    /**
     * Moves the replay's scrubber (to the end: it follows new events again).
     * @param {number} index events shown, 0 to all
     * @param {number} count events the run has
     */
    replaySeek(index, count) {
      const replay = state.replay;
      if (!replay) return;
      replay.index = Math.max(0, Math.min(count, index));
      replay.following = replay.index === count;
      changed();
    },

    /** @param {boolean} playing */
    replayPlaying(playing) {
      if (!state.replay || state.replay.playing === playing) return;
      state.replay.playing = playing;
      changed();
    },

    /**
     * A query of the runs list starts: with new filters, the list starts again.
     * @param {RunsListState['filters'] | undefined} filters
     * @param {boolean} older the next page rather than the first pages again
     */
    runsQueryStarted(filters, older) {
      const list = state.runsList;
      if (filters) list.filters = filters;
      if (!older) list.generation += 1;
      list.loading = true;
      changed();
      return list.generation;
    },

    /**
     * @param {number} generation the query's, from runsQueryStarted
     * @param {RunPage} page
     * @param {boolean} older appended to the runs shown, rather than replacing them
     */
    runsPageLoaded(generation, page, older) {
      const list = state.runsList;
      if (generation !== list.generation) return;
      list.runs = older ? [...list.runs, ...page.runs] : page.runs;
      list.cursor = page.cursor;
      list.error = undefined;
      list.loading = false;
      changed();
    },

    /**
     * @param {number} generation
     * @param {string} message
     */
    runsPageFailed(generation, message) {
      const list = state.runsList;
      if (generation !== list.generation) return;
      list.error = message;
      list.loading = false;
      changed();
    },

    /** The session view starts over (after a reconnection): its pages are read again. */
    sessionReset() {
      if (state.session) openSession(state.session.sessionId);
      changed();
    },

    /** @param {SessionState} session */
    sessionPageStarted(session) {
      if (state.session !== session) return;
      session.loading = true;
      changed();
    },

    /**
     * A page of the session's runs and each run's log.
     * @param {SessionState} session
     * @param {RunPage} page
     * @param {RunEvent[][]} logs
     */
    sessionPageLoaded(session, page, logs) {
      if (state.session !== session) return;
      page.runs.forEach((run, i) => {
        session.summaries.set(run.runId, run);
        const known = new Map((session.events.get(run.runId) || []).map((event) => [event.seq, event]));
        for (const event of logs[i] ?? []) known.set(event.seq, event);
        session.events.set(run.runId, [...known.values()]);
      });
      session.cursor = page.cursor;
      session.error = undefined;
      session.loading = false;
      changed();
    },

    /**
     * @param {SessionState} session
     * @param {string} message
     */
    sessionPageFailed(session, message) {
      if (state.session !== session) return;
      session.error = message;
      session.loading = false;
      changed();
    },

    /**
     * Fresh rows of the session's runs (their messages, for runs that arrived live).
     * @param {SessionState} session
     * @param {RunSummary[]} runs
     */
    sessionSummariesRead(session, runs) {
      if (state.session !== session) return;
      for (const run of runs) session.summaries.set(run.runId, run);
      changed();
    },

    /**
     * When steered messages arrived (steerId -> ms), from their steer records.
     * @param {SessionState} session
     * @param {Map<string, number>} arrivals
     */
    steerArrivalsRead(session, arrivals) {
      if (state.session !== session || arrivals.size === 0) return;
      for (const [steerId, at] of arrivals) session.steerArrivals.set(steerId, at);
      changed();
    },

    /** Forgets the oldest finished runs (their actors and events) beyond a handful. */
    prune() {
      const finished = [...state.runs.values()].filter((r) => r.terminal).sort((a, b) => b.order - a.order);
      for (const run of finished.slice(FINISHED_RUNS_KEPT)) {
        if (state.replay && state.replay.runId === run.runId) continue;
        state.runs.delete(run.runId);
        for (const id of [...state.actors.keys()]) if (runIdOfActor(id) === run.runId) state.actors.delete(id);
        if (state.selectedActorId && runIdOfActor(state.selectedActorId) === run.runId)
          state.selectedActorId = undefined;
      }
      // A session the engine no longer holds goes once none of its kept runs needs it.
      if (!state.snapshot) return;
      const held = new Set(state.snapshot.sessions.map((s) => `session:${s.sessionId}`));
      for (const run of state.runs.values()) if (run.sessionId) held.add(`session:${run.sessionId}`);
      for (const actor of [...state.actors.values()]) {
        if (actor.machineId === 'session' && !held.has(actor.id) && actor.seenAt < state.snapshotAt)
          state.actors.delete(actor.id);
      }
    },
  };

  return {
    /** @type {Readonly<State>} read it; change it through the actions */
    state,
    ...actions,
  };
}

/** @typedef {ReturnType<typeof createStore>} Store */

/**
 * The run that started last; a run still waiting in a lane only when none has started.
 * @param {Readonly<State>} state
 */
export function latestRunId(state) {
  /** @type {KnownRun | undefined} */
  let latest;
  for (const run of state.runs.values()) {
    if (
      !latest ||
      run.startedOrder > latest.startedOrder ||
      (run.startedOrder === latest.startedOrder && run.order > latest.order)
    )
      latest = run;
  }
  return latest && latest.runId;
}
