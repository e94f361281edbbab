/*
 * The Switchyard inspector page: plain browser JavaScript, no build step, no network beyond
 * the gateway it came from. It follows the engine over the gateway's JSON-RPC WebSocket
 * (inspect.subscribe, events.subscribe, engine.snapshot) and draws the live actors, the
 * statechart of the selected one, the selected run's events and tool batches, and the limiter;
 * from the store (runs.query, run.history) it lists past runs, replays one event by event
 * (/inspect/run/<runId>) and tells a session's story (/inspect/session/<sessionId>).
 */
(() => {
  'use strict';

  const inspector = globalThis.SwitchyardInspector;
  const { $, h, shortId, createRunsList, createReplay, createSessionView } = inspector;
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
  const SNAPSHOT_EVERY_MS = 500;
  const FINISHED_RUNS_KEPT = 12;
  const EVENTS_KEPT_PER_RUN = 2000;

  // ---------------------------------------------------------------------------------------
  // State

  const state = {
    machines: new Map(), // machineId -> { name, machineId, svg, states: { path: stateId } }
    actors: new Map(), // actorId -> actor
    runs: new Map(), // runId -> { runId, sessionId, events: Map(seq -> event), order, terminal, historyLoaded }
    nextOrder: 1,
    selectedActorId: undefined,
    follow: true,
    snapshot: undefined,
    snapshotAt: 0,
    shownMachine: undefined,
    /** 'live' (the actors now), 'run' (a run's replay) or 'session' (a session's story): the address says which. */
    view: 'live',
    /** The sidebar's tab was picked by hand: it is no longer switched for the user. */
    tabChosen: false,
    /** The sidebar's tab was set from a snapshot once. */
    tabSet: false,
  };

  function runIdOfActor(actorId) {
    const root = actorId.split('/')[0];
    return root.startsWith('run:') ? root.slice(4) : undefined;
  }

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

  function ensureActor(actorId, fields) {
    let actor = state.actors.get(actorId);
    if (!actor) {
      actor = {
        id: actorId,
        parentId: undefined,
        machineId: undefined,
        value: undefined,
        status: 'active',
        context: undefined,
        order: state.nextOrder++,
      };
      state.actors.set(actorId, actor);
    }
    Object.assign(actor, fields);
    actor.seenAt = performance.now();
    return actor;
  }

  /**
   * An actor's context after a snapshot: a whole one replaces it; otherwise the keys that
   * changed are merged in and the removed ones dropped (docs/inspector.md, "Live actors").
   */
  function contextAfter(context, snapshot) {
    if (snapshot.context) return snapshot.context;
    if (!snapshot.contextChanges && !snapshot.contextRemoved) return context;
    // Spread defines own properties: a "__proto__" key stays a key.
    const next = { ...context, ...snapshot.contextChanges };
    for (const key of snapshot.contextRemoved || []) delete next[key];
    return next;
  }

  function onInspect(event) {
    // Promise actors (a model turn, a tool execution) have no statechart: their parents show them.
    if (!event.machineId) return;
    const actor = ensureActor(event.actorId, { parentId: event.parentId, machineId: event.machineId });
    if (actor.placeholder) {
      // A run listed while it waited in its lane: now it is a live actor.
      actor.placeholder = false;
      actor.status = 'active';
    }
    const snapshot = event.snapshot;
    if (snapshot && event.type !== '@xstate.microstep') {
      if (snapshot.value !== undefined) actor.value = snapshot.value;
      actor.status = snapshot.status || actor.status;
      actor.context = contextAfter(actor.context, snapshot);
    }
    const runId = runIdOfActor(actor.id);
    if (runId !== undefined) {
      const run = ensureRun(runId);
      if (actor.machineId === 'run' && !run.startedOrder) {
        // The run has an actor now (it left the wait lane): the one to follow.
        run.startedOrder = state.nextOrder++;
        if (state.follow) selectActor(actor.id, true);
      }
      if (actor.machineId === 'run') {
        const sessionId = actor.context && actor.context.sessionId;
        if (typeof sessionId === 'string') run.sessionId = sessionId;
        if (actor.status !== 'active') run.terminal = true;
      }
    }
    changed();
  }

  function onRunEvent(event) {
    if (typeof event.runId !== 'string') return; // engine-wide: the gauges poll the snapshot
    const run = ensureRun(event.runId);
    run.sessionId = event.sessionId;
    run.events.set(event.seq, event);
    if (run.events.size > EVENTS_KEPT_PER_RUN) run.events.delete(run.events.keys().next().value);
    if (event.type === 'run.completed' || event.type === 'run.failed' || event.type === 'run.cancelled')
      run.terminal = true;
    runsList.onRunEvent(event);
    sessionView.onRunEvent(event);
    changed();
  }

  /** Forgets the oldest finished runs (their actors and events) beyond a handful. */
  function prune() {
    const finished = [...state.runs.values()].filter((r) => r.terminal).sort((a, b) => b.order - a.order);
    for (const run of finished.slice(FINISHED_RUNS_KEPT)) {
      if (replay.runId === run.runId) continue;
      state.runs.delete(run.runId);
      for (const id of [...state.actors.keys()]) if (runIdOfActor(id) === run.runId) state.actors.delete(id);
      if (state.selectedActorId && runIdOfActor(state.selectedActorId) === run.runId) state.selectedActorId = undefined;
    }
    // A session the engine no longer holds goes once none of its kept runs needs it.
    if (!state.snapshot) return;
    const held = new Set(state.snapshot.sessions.map((s) => `session:${s.sessionId}`));
    for (const run of state.runs.values()) if (run.sessionId) held.add(`session:${run.sessionId}`);
    for (const actor of [...state.actors.values()]) {
      if (actor.machineId === 'session' && !held.has(actor.id) && actor.seenAt < state.snapshotAt)
        state.actors.delete(actor.id);
    }
  }

  function selectActor(actorId, automatic) {
    if (!automatic && state.view !== 'live') navigate(links.live());
    state.selectedActorId = actorId;
    if (!automatic) {
      state.follow = false;
      $('[data-testid="follow-latest"]').checked = false;
    }
    const runId = runIdOfActor(actorId);
    if (runId !== undefined) void loadHistory(runId);
    changed();
  }

  /** The run that started last; a run still waiting in a lane only when none has started. */
  function latestRunId() {
    let latest;
    const rank = (run) => [run.startedOrder, run.order];
    for (const run of state.runs.values()) {
      if (!latest) latest = run;
      const [a, b] = rank(run);
      const [c, d] = rank(latest);
      if (a > c || (a === c && b > d)) latest = run;
    }
    return latest && latest.runId;
  }

  function selectedRunId() {
    if (state.view === 'run') return replay.runId;
    const fromSelection = state.selectedActorId && runIdOfActor(state.selectedActorId);
    return fromSelection || latestRunId();
  }

  // ---------------------------------------------------------------------------------------
  // JSON-RPC over the gateway's WebSocket

  const rpc = {
    socket: undefined,
    nextId: 1,
    pending: new Map(),
    retryMs: 500,
    call(method, params) {
      return new Promise((resolve, reject) => {
        const socket = this.socket;
        if (!socket || socket.readyState !== WebSocket.OPEN) {
          reject(new Error('not connected'));
          return;
        }
        const id = this.nextId++;
        this.pending.set(id, { resolve, reject });
        socket.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
      });
    },
  };

  function setConnection(status, text) {
    const node = $('[data-testid="conn-status"]');
    node.dataset.state = status;
    node.textContent = text;
  }

  function connect() {
    const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
    const socket = new WebSocket(`${scheme}://${location.host}/${query}`);
    rpc.socket = socket;
    setConnection('connecting', 'connecting…');
    socket.addEventListener('open', async () => {
      rpc.retryMs = 500;
      setConnection('live', 'live');
      try {
        await rpc.call('inspect.subscribe', {});
        await rpc.call('events.subscribe', {});
        const run = selectedRunId();
        if (run) {
          const known = state.runs.get(run);
          if (known) known.historyLoaded = false;
          void loadHistory(run);
        }
        void runsList.reload();
        if (state.view === 'run') void replay.reloadStatus();
        if (state.view === 'session') sessionView.reload();
        await pollSnapshot();
      } catch (error) {
        setConnection('error', `subscribe failed: ${error.message}`);
      }
    });
    socket.addEventListener('message', (message) => {
      let frame;
      try {
        frame = JSON.parse(message.data);
      } catch {
        return;
      }
      if (frame.id !== undefined && frame.id !== null) {
        const waiter = rpc.pending.get(frame.id);
        if (!waiter) return;
        rpc.pending.delete(frame.id);
        if (frame.error) waiter.reject(new Error(frame.error.message));
        else waiter.resolve(frame.result);
        return;
      }
      if (frame.method === 'inspect' && frame.params) onInspect(frame.params.event);
      else if (frame.method === 'event' && frame.params) onRunEvent(frame.params.event);
    });
    socket.addEventListener('close', (event) => {
      for (const waiter of rpc.pending.values()) waiter.reject(new Error('connection closed'));
      rpc.pending.clear();
      const why = event.code === 1006 ? 'gateway unreachable' : `closed (${event.code})`;
      setConnection('down', `${why} — retrying in ${Math.round(rpc.retryMs / 100) / 10} s`);
      setTimeout(connect, rpc.retryMs);
      rpc.retryMs = Math.min(rpc.retryMs * 2, 8000);
    });
  }

  async function loadHistory(runId) {
    const run = ensureRun(runId);
    if (run.historyLoaded) return;
    run.historyLoaded = true;
    try {
      const events = await rpc.call('run.history', { runId });
      for (const event of events) onRunEvent(event);
    } catch {
      run.historyLoaded = false;
    }
  }

  async function pollSnapshot() {
    try {
      const requestedAt = performance.now();
      state.snapshot = await rpc.call('engine.snapshot', {});
      state.snapshotAt = requestedAt;
      for (const session of state.snapshot.sessions) {
        const id = `session:${session.sessionId}`;
        if (!state.actors.has(id))
          ensureActor(id, { machineId: 'session', value: session.activeRunId ? 'busy' : 'idle' });
      }
      // Until someone picks a tab: a page opened while nothing runs shows what ran before; once
      // something runs, the live actors (and they stay, so a run that ends is still in view).
      const busy = state.snapshot.running.length + state.snapshot.waiting > 0;
      if (!state.tabChosen && state.view === 'live' && (busy || !state.tabSet)) setTab(busy ? 'live' : 'history');
      state.tabSet = true;
      changed();
    } catch {
      // Not connected: the next connection polls again.
    }
  }

  // ---------------------------------------------------------------------------------------
  // Rendering (batched into one frame)

  let frameRequested = false;
  function changed() {
    if (frameRequested) return;
    frameRequested = true;
    requestAnimationFrame(() => {
      frameRequested = false;
      prune();
      renderAll();
    });
  }

  function renderAll() {
    renderWhere();
    renderTree();
    renderReplayBar();
    renderChart();
    renderTimeline();
    renderLog();
    renderGauges();
    renderSession();
  }

  /** 'live.running.thinking' style paths of the innermost states of a state value. */
  function leafPaths(value, prefix) {
    if (value === undefined || value === null) return [];
    if (typeof value === 'string') return [prefix ? `${prefix}.${value}` : value];
    if (typeof value !== 'object') return [];
    const out = [];
    for (const [key, child] of Object.entries(value)) {
      const path = prefix ? `${prefix}.${key}` : key;
      const below = leafPaths(child, path);
      if (below.length === 0) out.push(path);
      else out.push(...below);
    }
    return out;
  }

  function valueText(value) {
    const leaves = leafPaths(value, '');
    return leaves.length ? leaves.join(' | ') : '–';
  }

  function stateText(actor) {
    if (actor.placeholder) return actor.status === 'waiting' ? 'waiting in the lane' : 'ended before it started';
    return valueText(actor.value);
  }

  function actorLabel(actor) {
    const own = actor.id.split('/').pop();
    if (actor.machineId === 'limiter') return { name: 'limiter', kind: 'limiter' };
    if (actor.machineId === 'session') return { name: actor.id.replace(/^session:/, ''), kind: 'session' };
    if (actor.machineId === 'run') return { name: shortId(actor.id.replace(/^run:/, '')), kind: 'run' };
    if (actor.machineId === 'act') {
      const turn = actor.context && actor.context.turn;
      return { name: typeof turn === 'number' ? `turn ${turn + 1}` : own, kind: 'tool batch' };
    }
    if (actor.machineId === 'toolCall') {
      const tool = actor.context && actor.context.tool;
      return { name: typeof tool === 'string' ? tool : own, kind: own };
    }
    return { name: own, kind: actor.machineId || '' };
  }

  /** Runs have no XState parent (each is its own system); they hang under their session. */
  function logicalParent(actor) {
    if (actor.parentId) return actor.parentId;
    if (actor.machineId === 'run') {
      const run = state.runs.get(actor.id.slice(4));
      if (run && run.sessionId) return `session:${run.sessionId}`;
    }
    return undefined;
  }

  let renderedTree = '';
  function renderTree() {
    const list = $('[data-testid="actor-tree"]');
    const children = new Map();
    const roots = [];
    // A run still waiting in its session's lane has no actor yet: it is listed all the same.
    for (const run of state.runs.values()) {
      const id = `run:${run.runId}`;
      const status = run.terminal ? 'done' : 'waiting';
      const known = state.actors.get(id);
      if (!known) ensureActor(id, { machineId: 'run', placeholder: true, status });
      else if (known.placeholder) known.status = status;
    }
    for (const actor of state.actors.values()) {
      const parent = logicalParent(actor);
      if (parent && !state.actors.has(parent) && parent.startsWith('session:'))
        ensureActor(parent, { machineId: 'session' });
    }
    if (!state.actors.has('limiter')) ensureActor('limiter', { machineId: 'limiter', value: 'limiting' });
    for (const actor of state.actors.values()) {
      const parent = logicalParent(actor);
      if (parent && state.actors.has(parent)) {
        if (!children.has(parent)) children.set(parent, []);
        children.get(parent).push(actor);
      } else {
        roots.push(actor);
      }
    }
    const rank = { limiter: 0, session: 1, run: 2 };
    const sort = (actors) =>
      actors.sort((a, b) => (rank[a.machineId] ?? 3) - (rank[b.machineId] ?? 3) || a.order - b.order);
    const rows = [];
    const walk = (actor, depth) => {
      const label = actorLabel(actor);
      const selected =
        actor.id === state.selectedActorId || (!state.selectedActorId && actor.id === `run:${latestRunId()}`);
      rows.push({ actor, depth, selected, label, text: stateText(actor) });
      for (const child of sort(children.get(actor.id) || [])) walk(child, depth + 1);
    };
    for (const root of sort(roots)) walk(root, 0);
    // Rebuilt only when something shown changed, so a click or the keyboard focus is not lost.
    const signature = JSON.stringify(
      rows.map((r) => [r.actor.id, r.depth, r.selected, r.actor.status, r.text, r.label.name, r.label.kind]),
    );
    if (signature === renderedTree) return;
    renderedTree = signature;
    const focused =
      document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.actorId : undefined;
    list.replaceChildren(
      ...rows.map(({ actor, depth, selected, label, text }) =>
        h(
          'li',
          {
            class: `actor${selected ? ' selected' : ''} status-${actor.status}`,
            style: `--depth:${depth}`,
            title: actor.id,
            role: 'treeitem',
            tabindex: 0,
            'aria-selected': String(selected),
            'aria-level': depth + 1,
            dataset: {
              testid: 'actor-item',
              actorId: actor.id,
              machine: actor.machineId || '',
              state: text,
              status: actor.status,
            },
          },
          h('span', { class: 'dot', 'aria-hidden': 'true' }),
          h('span', { class: 'actor-kind' }, label.kind),
          h('span', { class: 'actor-name' }, label.name),
          h('span', { class: 'actor-state' }, text),
        ),
      ),
    );
    if (focused) {
      const again = [...list.children].find((item) => item.dataset.actorId === focused);
      if (again) again.focus();
    }
    if (state.follow) {
      const selected = list.querySelector('.actor.selected');
      if (selected) selected.scrollIntoView({ block: 'nearest' });
    }
  }

  function selectedActor() {
    if (state.view === 'run') return replay.actor();
    const id = state.selectedActorId || (latestRunId() ? `run:${latestRunId()}` : 'limiter');
    return state.actors.get(id);
  }

  function renderChart() {
    const box = $('[data-testid="statechart"]');
    const meta = $('[data-testid="chart-meta"]');
    const actor = selectedActor();
    const machine = actor && state.machines.get(actor.machineId);
    if (!actor || !machine) {
      box.dataset.machine = '';
      state.shownMachine = undefined;
      box.replaceChildren(
        h('p', { class: 'empty' }, state.machines.size ? 'Waiting for actors…' : 'Loading statecharts…'),
      );
      meta.replaceChildren();
      return;
    }
    if (state.shownMachine !== machine.machineId || !box.querySelector('svg')) {
      box.innerHTML = machine.svg;
      state.shownMachine = machine.machineId;
    }
    box.dataset.machine = machine.name;
    box.dataset.actorId = actor.id;
    const leaves = leafPaths(actor.value, '');
    const active = new Set(['']);
    for (const leaf of leaves) {
      const parts = leaf.split('.');
      for (let i = 1; i <= parts.length; i++) active.add(parts.slice(0, i).join('.'));
    }
    const activeIds = new Set([...active].map((path) => machine.states[path]).filter(Boolean));
    const currentIds = new Set(leaves.map((path) => machine.states[path]).filter(Boolean));
    for (const node of box.querySelectorAll('[data-state-id]')) {
      const id = node.getAttribute('data-state-id');
      node.classList.toggle('sc-active', activeIds.has(id) && !node.classList.contains('sc-machine'));
      node.classList.toggle('sc-current', currentIds.has(id));
    }
    for (const node of box.querySelectorAll('[data-heading-of]')) {
      node.classList.toggle(
        'sc-active',
        activeIds.has(node.getAttribute('data-heading-of')) && !node.classList.contains('sc-machine'),
      );
    }
    box.dataset.current = [...currentIds].join(' ');
    const current = box.querySelector('.sc-current');
    if (current && currentIds.size > 0) revealInChart(box, current);
    meta.replaceChildren(
      h('span', { class: 'pill machine' }, machine.name),
      h('span', { class: 'chart-actor', title: actor.id }, actor.id),
      h('span', { class: `pill status status-${actor.status}` }, actor.status),
      h('span', { class: 'pill state', dataset: { testid: 'chart-state' } }, stateText(actor)),
    );
  }

  /** Scrolls the chart so the state the actor is in stays visible (unless the whole chart fits). */
  function revealInChart(box, node) {
    const view = box.getBoundingClientRect();
    const target = node.getBoundingClientRect();
    const margin = 24;
    if (target.top >= view.top + margin && target.bottom <= view.bottom - margin) return;
    const top = box.scrollTop + (target.top - view.top) - (view.height - target.height) / 2;
    box.scrollTo({ top: Math.max(0, top), behavior: 'smooth' });
  }

  // ----- event log

  const EVENT_KIND = (type) => type.split('.')[0];

  function summary(event) {
    switch (event.type) {
      case 'run.queued':
        return `position ${event.position} (${event.reason})`;
      case 'run.started':
        return `agent ${event.agentId} · model ${event.model}`;
      case 'run.steered':
        return JSON.stringify(event.text);
      case 'turn.started':
      case 'turn.finished':
        return `turn ${event.turn + 1}`;
      case 'model.delta':
        return JSON.stringify(event.text);
      case 'model.message':
        return event.toolCalls && event.toolCalls.length
          ? `${event.toolCalls.length} tool call(s): ${event.toolCalls.map((c) => c.name).join(', ')}`
          : JSON.stringify(event.text);
      case 'tool.scheduled':
        return `${event.claims.length} call(s) in ${event.groups.length} group(s), ${event.mode}`;
      case 'tool.waiting':
        return `${event.callId} · waits for ${event.blockedBy.tool} of run ${shortId(event.blockedBy.runId)} · ${event.resource}`;
      case 'tool.started':
        return `${event.tool} · ${event.callId}`;
      case 'tool.finished':
        return `${event.callId} · ${event.ok ? 'ok' : `error ${event.error ? event.error.code : ''}`}${event.synthetic ? ' (synthetic)' : ''} · ${event.durationMs} ms`;
      case 'approval.requested':
        return `${event.callId} · ${event.approvalId}`;
      case 'approval.resolved':
        return `${event.decision} by ${event.by}`;
      case 'run.completed':
        return JSON.stringify(event.output);
      case 'run.failed':
        return `${event.error.code}: ${event.error.message}`;
      case 'run.cancelled':
        return event.reason;
      case 'run.retrying':
        return `attempt ${event.attempt}: ${event.reason}`;
      case 'sandbox.warning':
        return event.message;
      default:
        return '';
    }
  }

  function sortedEvents(run) {
    return [...run.events.values()].sort((a, b) => a.seq - b.seq);
  }

  /** The run's events up to the replay's scrubber (all of them outside a replay). */
  function visibleEvents(run) {
    const events = sortedEvents(run);
    return state.view === 'run' && run.runId === replay.runId ? events.slice(0, replay.index) : events;
  }

  let renderedLog = { runId: undefined, count: 0, index: undefined };
  function renderLog() {
    const box = $('[data-testid="event-log"]');
    const meta = $('[data-testid="log-meta"]');
    const runId = selectedRunId();
    const run = runId && state.runs.get(runId);
    if (!run) {
      box.replaceChildren(h('p', { class: 'empty' }, 'No run yet. Submit one and it appears here.'));
      meta.textContent = '';
      renderedLog = { runId: undefined, count: 0 };
      return;
    }
    const events = sortedEvents(run);
    const replayIndex = state.view === 'run' ? replay.index : undefined;
    meta.textContent = `run ${shortId(run.runId)} · session ${run.sessionId || '?'} · ${events.length} events`;
    if (renderedLog.runId === runId && renderedLog.count === events.length) {
      if (renderedLog.index !== replayIndex) markReplayedEvents(box, replayIndex);
      renderedLog.index = replayIndex;
      return;
    }
    const stick = box.scrollTop + box.clientHeight >= box.scrollHeight - 24;
    const t0 = events.length ? Date.parse(events[0].at) : 0;
    const rows = events.map((event) =>
      h(
        'div',
        {
          class: `event kind-${EVENT_KIND(event.type)} type-${event.type.replace('.', '-')}`,
          dataset: { testid: 'event-row', type: event.type, seq: event.seq },
        },
        h('span', { class: 'seq' }, event.seq),
        h('span', { class: 'at', title: event.at }, `+${Date.parse(event.at) - t0} ms`),
        h('span', { class: 'type' }, event.type),
        h('span', { class: 'detail', title: summary(event) }, summary(event)),
      ),
    );
    box.replaceChildren(...(rows.length ? rows : [h('p', { class: 'empty' }, 'No events seen for this run yet.')]));
    if (replayIndex !== undefined) markReplayedEvents(box, replayIndex);
    else if (stick || renderedLog.runId !== runId) box.scrollTop = box.scrollHeight;
    renderedLog = { runId, count: events.length, index: replayIndex };
  }

  /** In a replay: the events after the scrubber are dimmed, the one it stands on is marked and kept in view. */
  function markReplayedEvents(box, index) {
    const rows = [...box.querySelectorAll('[data-testid="event-row"]')];
    rows.forEach((row, i) => {
      row.classList.toggle('future', i >= index);
      row.classList.toggle('current', i === index - 1);
    });
    const current = rows[index - 1];
    if (current) current.scrollIntoView({ block: 'nearest' });
    else box.scrollTop = 0;
  }

  // ----- tool-batch timeline

  function batchesOf(run) {
    const events = visibleEvents(run);
    const batches = [];
    let current;
    for (const event of events) {
      if (event.type === 'tool.scheduled') {
        current = { schedule: event, calls: new Map() };
        event.claims.forEach((claim, index) =>
          current.calls.set(claim.callId, { ...claim, index, start: undefined, end: undefined, finished: undefined }),
        );
        batches.push(current);
      } else if (
        current &&
        (event.type === 'tool.waiting' || event.type === 'tool.started' || event.type === 'tool.finished')
      ) {
        const call = current.calls.get(event.callId);
        if (!call) continue;
        // A wait for another run's claim: drawn before the call's own bar.
        if (event.type === 'tool.waiting') {
          call.waitStart = Date.parse(event.at);
          call.waiting = event;
        } else if (event.type === 'tool.started') call.start = Date.parse(event.at);
        else {
          call.end = Date.parse(event.at);
          call.finished = event;
          if (call.start === undefined) call.start = call.end;
        }
      } else if (event.type === 'turn.finished') {
        current = undefined;
      }
    }
    return batches;
  }

  function outcomeOf(call) {
    if (!call.finished) return call.start === undefined ? 'waiting' : 'running';
    if (call.finished.synthetic) return 'synthetic';
    return call.finished.ok ? 'ok' : 'error';
  }

  function formatMs(ms) {
    return ms >= 10_000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms)} ms`;
  }

  function renderBatch(batch, now) {
    const calls = [...batch.calls.values()];
    const scheduledAt = Date.parse(batch.schedule.at);
    const starts = calls.map((c) => (c.waitStart !== undefined ? c.waitStart : c.start)).filter((t) => t !== undefined);
    const t0 = Math.min(scheduledAt, ...starts);
    const ends = calls.map((c) =>
      c.end !== undefined ? c.end : c.start !== undefined || c.waitStart !== undefined ? now : t0,
    );
    const t1 = Math.max(t0 + 1, ...ends);
    const span = t1 - t0;
    const pct = (t) => `${(((t - t0) / span) * 100).toFixed(3)}%`;
    const width = (a, b) => `${Math.max(0.4, ((b - a) / span) * 100).toFixed(3)}%`;
    const { groups, boundaries, mode, turn } = batch.schedule;
    const body = [];
    groups.forEach(([start, end], g) => {
      if (g > 0) {
        const boundary = boundaries[g - 1];
        if (boundary) {
          const tip = `group ${g + 1} waits for group ${g}: ${boundary.next} conflicts with ${boundary.previous} — ${boundary.reason}`;
          body.push(
            h(
              'div',
              {
                class: 'boundary',
                title: tip,
                dataset: { testid: 'timeline-boundary', reason: boundary.reason, index: boundary.index },
              },
              h('span', { class: 'boundary-line', 'aria-hidden': 'true' }),
              h('span', { class: 'boundary-text' }, `waits: ${boundary.reason}`),
              h('span', { class: 'boundary-line', 'aria-hidden': 'true' }),
            ),
          );
        }
      }
      const members = calls.slice(start, end);
      const gStarts = members.map((c) => c.start).filter((t) => t !== undefined);
      const gEnds = members
        .map((c) => (c.end !== undefined ? c.end : c.start !== undefined ? now : undefined))
        .filter((t) => t !== undefined);
      const band = gStarts.length
        ? h('div', {
            class: 'band',
            style: `left:${pct(Math.min(...gStarts))};width:${width(Math.min(...gStarts), Math.max(...gEnds))}`,
          })
        : null;
      const rows = members.map((call) => {
        const outcome = outcomeOf(call);
        const callEnd = call.end !== undefined ? call.end : now;
        const duration = call.start !== undefined ? callEnd - call.start : 0;
        const error =
          call.finished && call.finished.error ? ` · ${call.finished.error.code}: ${call.finished.error.message}` : '';
        const waitEnd = call.start !== undefined ? call.start : call.end !== undefined ? call.end : now;
        const wait =
          call.waitStart === undefined
            ? null
            : h('div', {
                class: 'bar waiting',
                style: `left:${pct(call.waitStart)};width:${width(call.waitStart, waitEnd)}`,
                title: `${call.tool} (${call.callId}) waited ${formatMs(waitEnd - call.waitStart)} for ${call.waiting.blockedBy.tool} (${call.waiting.blockedBy.callId}) of run ${call.waiting.blockedBy.runId}: ${call.waiting.resource}`,
                dataset: {
                  testid: 'timeline-wait',
                  callId: call.callId,
                  blockedBy: call.waiting.blockedBy.runId,
                  resource: call.waiting.resource,
                },
              });
        const bar =
          call.start === undefined
            ? null
            : h(
                'div',
                {
                  class: `bar ${outcome}`,
                  style: `left:${pct(call.start)};width:${width(call.start, callEnd)}`,
                  title: `${call.tool} (${call.callId}) · ${outcome} · ${formatMs(duration)} · claim ${call.label}${error}`,
                  dataset: {
                    testid: 'timeline-bar',
                    callId: call.callId,
                    tool: call.tool,
                    group: g,
                    outcome,
                    start: call.start,
                    end: call.end !== undefined ? call.end : '',
                  },
                },
                h('span', { class: 'bar-text' }, formatMs(duration)),
              );
        return h(
          'div',
          { class: 'row' },
          h(
            'div',
            { class: 'row-label', title: `${call.tool} · ${call.callId} · claim ${call.label}` },
            h('span', { class: 'tool' }, call.tool),
            h('span', { class: 'claim' }, call.label),
          ),
          h('div', { class: 'track' }, wait, bar),
        );
      });
      body.push(
        h(
          'div',
          { class: 'group', dataset: { testid: 'timeline-group', group: g, size: members.length } },
          h(
            'div',
            { class: 'group-label' },
            `group ${g + 1}`,
            h('span', null, members.length > 1 ? ` · ${members.length} in parallel` : ' · serial'),
          ),
          h('div', { class: 'group-rows' }, h('div', { class: 'band-layer' }, band), ...rows),
        ),
      );
    });
    const ticks = [0, 0.5, 1].map((f) => h('span', { class: 'tick', style: `left:${f * 100}%` }, formatMs(span * f)));
    const finished = calls.every((c) => c.finished);
    return h(
      'div',
      { class: 'batch', dataset: { testid: 'timeline-batch', turn } },
      h(
        'div',
        { class: 'batch-head' },
        h('strong', null, `Turn ${turn + 1}`),
        h(
          'span',
          null,
          `${calls.length} call${calls.length === 1 ? '' : 's'} · ${groups.length} group${groups.length === 1 ? '' : 's'} · ${mode}`,
        ),
        h('span', { class: 'batch-time' }, finished ? formatMs(span) : 'running…'),
      ),
      ...body,
      h('div', { class: 'axis' }, h('div', { class: 'axis-pad' }), h('div', { class: 'axis-track' }, ...ticks)),
    );
  }

  let renderedTimeline = '';
  function renderTimeline() {
    const box = $('[data-testid="timeline"]');
    const runId = selectedRunId();
    const run = runId && state.runs.get(runId);
    const batches = run ? batchesOf(run) : [];
    const replayAt = state.view === 'run' ? replay.time() : undefined;
    const running =
      replayAt === undefined &&
      batches.some((b) =>
        [...b.calls.values()].some((c) => (c.start !== undefined || c.waitStart !== undefined) && !c.finished),
      );
    // Redrawn only when it changed (or while a bar grows), so a tooltip under the mouse stays put.
    const signature = `${runId}:${run ? run.events.size : 0}:${batches.length}:${state.view === 'run' ? replay.index : ''}`;
    if (!running && signature === renderedTimeline) return;
    renderedTimeline = signature;
    if (batches.length === 0) {
      box.replaceChildren(h('p', { class: 'empty' }, run ? 'No tool batch in this run yet.' : 'No run selected.'));
      return;
    }
    const now = replayAt ?? Date.now();
    box.replaceChildren(...batches.map((batch) => renderBatch(batch, now)));
    if (running) changedSoon();
  }

  let soon;
  function changedSoon() {
    if (soon) return;
    soon = setTimeout(() => {
      soon = undefined;
      changed();
    }, 100);
  }

  // ----- gauges

  function meter(inUse, max, testid, extra) {
    const ratio = max > 0 ? Math.min(1, inUse / max) : 0;
    return h(
      'div',
      { class: `meter${ratio >= 1 ? ' full' : ''}`, dataset: { testid, inUse, max, ...(extra || {}) } },
      h('div', { class: 'meter-fill', style: `width:${(ratio * 100).toFixed(1)}%` }),
    );
  }

  let renderedGauges = '';
  function renderGauges() {
    const box = $('[data-testid="gauges"]');
    const snap = state.snapshot;
    const signature = JSON.stringify(snap || null);
    if (signature === renderedGauges) return;
    renderedGauges = signature;
    if (!snap) {
      box.replaceChildren(h('p', { class: 'empty' }, 'Waiting for the engine…'));
      return;
    }
    const agents = Object.entries(snap.perAgent);
    const lanes = snap.sessions;
    box.replaceChildren(
      ...[
        h(
          'div',
          { class: 'gauge' },
          h(
            'div',
            { class: 'gauge-head' },
            h('span', null, 'global permits'),
            h('b', null, `${snap.global.inUse} / ${snap.global.max}`),
          ),
          meter(snap.global.inUse, snap.global.max, 'gauge-global'),
        ),
        h(
          'div',
          { class: 'gauge-row' },
          h(
            'div',
            { class: 'stat', dataset: { testid: 'gauge-waiting', value: snap.waiting } },
            h('b', null, snap.waiting),
            h('span', null, 'runs waiting'),
          ),
          h(
            'div',
            { class: 'stat', dataset: { testid: 'gauge-running', value: snap.running.length } },
            h('b', null, snap.running.length),
            h('span', null, 'running'),
          ),
        ),
        h('div', { class: 'gauge-title' }, 'per agent'),
        agents.length
          ? agents.map(([agentId, a]) =>
              h(
                'div',
                { class: 'gauge small' },
                h('div', { class: 'gauge-head' }, h('span', null, agentId), h('b', null, `${a.inUse} / ${a.max}`)),
                meter(a.inUse, a.max, 'gauge-agent', { agent: agentId }),
              ),
            )
          : h('p', { class: 'muted' }, 'no agent holds a permit'),
        h('div', { class: 'gauge-title' }, 'wait lanes'),
        lanes.length
          ? lanes.map((s) =>
              h(
                'div',
                { class: 'lane', dataset: { testid: 'gauge-lane', session: s.sessionId, depth: s.laneDepth } },
                h('span', { class: 'lane-name', title: s.sessionId }, s.sessionId),
                h(
                  'span',
                  { class: `lane-active${s.activeRunId ? ' busy' : ''}`, title: s.activeRunId || 'idle' },
                  s.activeRunId ? 'busy' : 'idle',
                ),
                h(
                  'span',
                  { class: 'lane-depth' },
                  ...Array.from({ length: Math.min(s.laneDepth, 12) }, () => h('i')),
                  h('b', null, s.laneDepth),
                ),
              ),
            )
          : h('p', { class: 'muted' }, 'no session'),
      ].flat(),
    );
    $('[data-testid="summary"]').textContent =
      `${snap.running.length} running · ${snap.waiting} waiting · ${lanes.length} session${lanes.length === 1 ? '' : 's'}`;
  }

  // ---------------------------------------------------------------------------------------
  // Views: the address says which — /inspect (live), /inspect/run/<runId> (a replay),
  // /inspect/session/<sessionId> (a session's story); no token in them (the tab keeps it).

  const links = {
    live: () => '/inspect',
    run: (runId) => `/inspect/run/${encodeURIComponent(runId)}`,
    session: (sessionId) => `/inspect/session/${encodeURIComponent(sessionId)}`,
  };

  function routeOf(pathname) {
    const match = /^\/inspect\/(run|session)\/([^/]+)\/?$/.exec(pathname);
    if (!match) return { view: 'live' };
    const id = decodeURIComponent(match[2]);
    return match[1] === 'run' ? { view: 'run', runId: id } : { view: 'session', sessionId: id };
  }

  function navigate(href) {
    if (href !== `${location.pathname}${location.search}`) history.pushState(null, '', href);
    applyRoute();
  }

  function setTab(tab) {
    document.body.dataset.tab = tab;
  }

  function applyRoute() {
    const route = routeOf(location.pathname);
    state.view = route.view;
    document.body.dataset.view = route.view;
    if (route.view === 'run') {
      replay.open(route.runId);
      ensureRun(route.runId);
      void loadHistory(route.runId);
      setTab('history');
    } else {
      replay.close();
    }
    if (route.view === 'session') {
      void sessionView.show(route.sessionId);
      setTab('history');
    } else {
      sessionView.hide();
    }
    runsList.select(route.runId);
    changed();
  }

  function renderWhere() {
    const box = $('[data-testid="where"]');
    const signature = `${state.view}:${replay.runId}:${sessionView.sessionId}`;
    if (box.dataset.signature === signature) return;
    box.dataset.signature = signature;
    const crumbs =
      state.view === 'run'
        ? [
            h('a', { href: links.live() }, 'live'),
            ' › replay of run ',
            h('b', { title: replay.runId }, shortId(replay.runId)),
          ]
        : state.view === 'session'
          ? [h('a', { href: links.live() }, 'live'), ' › session ', h('b', null, sessionView.sessionId)]
          : ['live'];
    box.replaceChildren(...crumbs);
  }

  function renderReplayBar() {
    if (state.view !== 'run') return;
    const run = state.runs.get(replay.runId);
    replay.update(run ? sortedEvents(run) : []);
  }

  function renderSession() {
    if (state.view === 'session') sessionView.render();
  }

  // ---------------------------------------------------------------------------------------
  // Start

  const call = (method, params) => rpc.call(method, params);
  const runsList = createRunsList({ root: $('[data-testid="history"]'), call, links });
  const replay = createReplay({ root: $('[data-testid="replay"]'), call, links, changed });
  const sessionView = createSessionView({ root: $('[data-testid="session"]'), call, links });

  document.addEventListener('click', (event) => {
    // Links to the page's own views navigate inside it.
    const link = event.target.closest('a[href^="/inspect"]');
    if (
      !link ||
      event.defaultPrevented ||
      event.button !== 0 ||
      event.metaKey ||
      event.ctrlKey ||
      event.shiftKey ||
      event.altKey
    )
      return;
    event.preventDefault();
    navigate(link.getAttribute('href'));
  });
  window.addEventListener('popstate', applyRoute);
  document.addEventListener('keydown', (event) => {
    if (state.view !== 'run' || event.target.closest('input, select, textarea, button, [role="treeitem"]')) return;
    if (replay.key(event)) event.preventDefault();
  });
  for (const tab of document.querySelectorAll('.tab')) {
    tab.addEventListener('click', () => {
      state.tabChosen = true;
      setTab(tab.dataset.tab);
    });
  }
  $('[data-testid="event-log"]').addEventListener('click', (event) => {
    const row = event.target.closest('[data-testid="event-row"]');
    if (!row || state.view !== 'run') return;
    replay.seek([...row.parentElement.children].indexOf(row) + 1);
  });

  $('[data-testid="actor-tree"]').addEventListener('click', (event) => {
    const item = event.target.closest('[data-actor-id]');
    if (item) selectActor(item.dataset.actorId, false);
  });
  $('[data-testid="actor-tree"]').addEventListener('keydown', (event) => {
    const item = event.target.closest('[data-actor-id]');
    if (!item) return;
    if (event.key === 'Enter' || event.key === ' ') {
      event.preventDefault();
      selectActor(item.dataset.actorId, false);
    } else if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
      event.preventDefault();
      const next = event.key === 'ArrowDown' ? item.nextElementSibling : item.previousElementSibling;
      if (next) next.focus();
    }
  });
  $('[data-testid="chart-fit"]').addEventListener('click', (event) => {
    const box = $('[data-testid="statechart"]');
    const fit = box.classList.toggle('fit');
    event.currentTarget.textContent = fit ? 'fit width' : 'whole chart';
    event.currentTarget.setAttribute('aria-pressed', String(fit));
  });
  $('[data-testid="follow-latest"]').addEventListener('change', (event) => {
    state.follow = event.target.checked;
    if (state.follow) {
      const latest = latestRunId();
      state.selectedActorId = latest ? `run:${latest}` : undefined;
    }
    changed();
  });

  fetch(`/inspect/machines.json${query}`)
    .then((response) => {
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      return response.json();
    })
    .then((catalog) => {
      for (const machine of catalog.machines) state.machines.set(machine.machineId, machine);
      document.body.dataset.statecharts = 'loaded';
      changed();
    })
    .catch((error) => setConnection('error', `could not load the statecharts: ${error.message}`));

  applyRoute();
  connect();
  setInterval(() => {
    if (rpc.socket && rpc.socket.readyState === WebSocket.OPEN) void pollSnapshot();
  }, SNAPSHOT_EVERY_MS);
  changed();
})();
