// @ts-check
/*
 * Where a run's statechart (machines/run.machine.ts) was at each event of its log, derived
 * from the events alone, so a finished run can be replayed without a live actor. Each event
 * type the run appends in a known state moves the chart there; any other type (one added
 * later, sandbox.warning) leaves it where it was. Pure; test/inspector-page/run-replay.test.ts holds
 * the table against the run machine's states.
 */
/** The state path before any event: a run starts queued, for permits or in its session's lane. */
export const RUN_STATE_BEFORE_EVENTS = 'live.queued';

/**
 * Event type -> the run state (snapshot value path) the run is in once it appended the event.
 * @type {Readonly<Partial<Record<import('./wire-types.js').RunEvent['type'], string>>>}
 */
export const RUN_STATE_AFTER_EVENT = Object.freeze({
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

/**
 * The state path after each event, in the order given (the run's log, by seq).
 * @param {readonly { type: string }[]} events
 * @returns {string[]}
 */
export function runStatePaths(events) {
  /** @type {Record<string, string | undefined>} */
  const table = RUN_STATE_AFTER_EVENT;
  let path = RUN_STATE_BEFORE_EVENTS;
  return events.map((event) => {
    const next = table[event.type];
    if (next !== undefined) path = next;
    return path;
  });
}

/**
 * 'live.running.thinking' -> { live: { running: 'thinking' } }: the snapshot value the chart lights up.
 * @param {string} path
 * @returns {unknown}
 */
export function stateValueOf(path) {
  const keys = path.split('.');
  return keys.reduceRight(
    (/** @type {unknown} */ value, key) => (value === undefined ? key : { [key]: value }),
    /** @type {unknown} */ (undefined),
  );
}
