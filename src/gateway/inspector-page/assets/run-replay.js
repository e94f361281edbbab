/*
 * Where a run's statechart (machines/run.machine.ts) was at each event of its log, derived
 * from the events alone, so a finished run can be replayed without a live actor. Each event
 * type the run appends in a known state moves the chart there; any other type (one added
 * later, sandbox.warning) leaves it where it was. Pure; test/inspect/run-replay.test.ts holds
 * the table against the run machine's states.
 */
((inspector) => {
  'use strict';

  /** The state path before any event: a run starts queued, for permits or in its session's lane. */
  const RUN_STATE_BEFORE_EVENTS = 'live.queued';

  /** Event type -> the run state (snapshot value path) the run is in once it appended the event. */
  const RUN_STATE_AFTER_EVENT = Object.freeze({
    'run.queued': 'live.queued',
    // Entering `running` enters `thinking`: its entry consumes steers, then starts a model turn.
    'run.started': 'live.running.thinking',
    'run.steered': 'live.running.thinking',
    'turn.started': 'live.running.thinking',
    'model.delta': 'live.running.thinking',
    'model.message': 'live.running.thinking',
    'run.retrying': 'live.running.thinking',
    // `acting` announces its schedule on entry; every call, and its approval, happens inside it.
    'tool.scheduled': 'live.running.acting',
    'tool.started': 'live.running.acting',
    'approval.requested': 'live.running.acting',
    'approval.resolved': 'live.running.acting',
    'tool.finished': 'live.running.acting',
    'turn.finished': 'live.running.boundary',
    // The terminal event is appended on the way out of `live`.
    'run.completed': 'completed',
    'run.cancelled': 'cancelled',
    'run.failed': 'failed',
  });

  /** The state path after each event, in the order given (the run's log, by seq). */
  function runStatePaths(events) {
    let path = RUN_STATE_BEFORE_EVENTS;
    return events.map((event) => {
      const next = RUN_STATE_AFTER_EVENT[event.type];
      if (next !== undefined) path = next;
      return path;
    });
  }

  /** 'live.running.thinking' -> { live: { running: 'thinking' } }: the snapshot value the chart lights up. */
  function stateValueOf(path) {
    const keys = path.split('.');
    return keys.reduceRight((value, key) => (value === undefined ? key : { [key]: value }), undefined);
  }

  Object.assign(inspector, { RUN_STATE_BEFORE_EVENTS, RUN_STATE_AFTER_EVENT, runStatePaths, stateValueOf });
})((globalThis.SwitchyardInspector ??= {}));
