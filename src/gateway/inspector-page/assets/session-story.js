// @ts-check
/*
 * A busy session's story, derived from its events alone (docs/runs.md, "Busy sessions"): for
 * each run, when its message arrived, how long it waited in the lane or for permits, when it
 * ran, its turns, the steers it read and at which turn, how it ended; and which message
 * interrupted or superseded which run. Pure; the swimlane draws it, and
 * test/inspector-page/session-story.test.ts holds the rules.
 *
 * Who cancelled whom is read from the order the session's decisions are logged in (one
 * submit's decisions get consecutive sessionSeqs, docs/events.md): an interrupting message
 * first drops the interrupting messages still in the lane (`run.cancelled superseded`), then
 * is queued (`run.queued`), then cancels the active run (`interrupted` if it was running,
 * `superseded` if it was an interrupter still waiting for permits). With a gap in the
 * numbering (runs not loaded), no link is drawn rather than a wrong one.
 */

/** @typedef {import('./wire-types.js').RunEvent} RunEvent */
/** @typedef {import('./wire-types.js').RunEventOf<'run.cancelled'>} Cancelled */
/** @typedef {'interrupt' | 'supersede'} LinkKind */
/**
 * One run's row of the story; `arrivedAt` of a steer is filled in by the session view, from the steer's record.
 * @typedef {{
 *   runId: string,
 *   arrivedAt: number,
 *   queuedAt: number | undefined,
 *   queuedFor: string | undefined,
 *   startedAt: number | undefined,
 *   endedAt: number | undefined,
 *   state: string | undefined,
 *   outcome: string | undefined,
 *   turns: { turn: number, startedAt: number, finishedAt: number | undefined }[],
 *   steers: { steerId: string, text: string, turn: number | undefined, at: number, arrivedAt?: number | undefined }[],
 *   cancelledBy: { kind: LinkKind, by: string } | undefined,
 * }} Lane
 */
/** @typedef {{ kind: LinkKind, by: string, run: string, at: number }} Link */
/** @typedef {{ t0: number, t1: number, runs: Lane[], links: Link[] }} Story */

/** @param {string} at */
const ms = (at) => Date.parse(at);

/**
 * @param {Map<string, Lane>} runs
 * @param {RunEvent} event
 * @returns {Lane}
 */
function laneOf(runs, event) {
  let run = runs.get(event.runId);
  if (!run) {
    run = {
      runId: event.runId,
      arrivedAt: ms(event.at),
      queuedAt: undefined,
      queuedFor: undefined,
      startedAt: undefined,
      endedAt: undefined,
      state: undefined,
      outcome: undefined,
      turns: [],
      steers: [],
      cancelledBy: undefined,
    };
    runs.set(event.runId, run);
  }
  return run;
}

/**
 * The run whose message made this cancellation, from its neighbours in the session's numbering.
 * @param {Cancelled} event
 * @param {Lane} run
 * @param {Map<number, RunEvent>} bySeq
 */
function cancelledBy(event, run, bySeq) {
  /** @param {RunEvent | undefined} e @returns {e is RunEvent} */
  const isQueuedOfOther = (e) => e !== undefined && e.type === 'run.queued' && e.runId !== event.runId;
  // The active run: cancelled right after the newcomer was queued. A waiting interrupter is
  // active once its session admitted it (it then waits for permits: queued for `limits`).
  if (event.reason === 'interrupted' || run.queuedFor === 'limits') {
    const previous = bySeq.get(event.sessionSeq - 1);
    return isQueuedOfOther(previous) ? previous.runId : undefined;
  }
  // A message in the lane: dropped just before the newcomer is queued (with the others it drops).
  let seq = event.sessionSeq + 1;
  for (let e = bySeq.get(seq); e?.type === 'run.cancelled' && e.reason === 'superseded'; e = bySeq.get(seq)) seq += 1;
  const next = bySeq.get(seq);
  return isQueuedOfOther(next) ? next.runId : undefined;
}

/**
 * The story of the given events of one session (any order, any subset of its runs): runs in
 * the order their first event was logged, and the links between them.
 * @param {readonly RunEvent[]} events
 * @returns {Story}
 */
export function sessionStory(events) {
  const sorted = [...events].sort((a, b) => a.sessionSeq - b.sessionSeq);
  const bySeq = new Map(sorted.map((event) => [event.sessionSeq, event]));
  /** @type {Map<string, Lane>} */
  const runs = new Map();
  /** @type {Link[]} */
  const links = [];
  for (const event of sorted) {
    const run = laneOf(runs, event);
    const at = ms(event.at);
    switch (event.type) {
      case 'run.queued':
        run.queuedAt ??= at;
        run.queuedFor = event.reason;
        break;
      case 'run.started':
        run.startedAt = at;
        break;
      case 'turn.started':
        run.turns.push({ turn: event.turn, startedAt: at, finishedAt: undefined });
        break;
      case 'turn.finished': {
        const turn = run.turns.find((t) => t.turn === event.turn);
        if (turn) turn.finishedAt = at;
        break;
      }
      case 'run.steered':
        run.steers.push({ steerId: event.steerId, text: event.text, turn: event.consumedAtTurn, at });
        break;
      case 'run.completed':
      case 'run.failed':
      case 'run.cancelled': {
        run.endedAt = at;
        run.state = event.type.slice(4);
        run.outcome =
          event.type === 'run.completed' ? 'completed' : event.type === 'run.failed' ? event.error.code : event.reason;
        if (event.type === 'run.cancelled' && (event.reason === 'interrupted' || event.reason === 'superseded')) {
          const by = cancelledBy(event, run, bySeq);
          if (by !== undefined) {
            /** @type {LinkKind} */
            const kind = event.reason === 'interrupted' ? 'interrupt' : 'supersede';
            run.cancelledBy = { kind, by };
            links.push({ kind, by, run: run.runId, at });
          }
        }
        break;
      }
      default:
        break;
    }
  }
  const times = sorted.map((event) => ms(event.at));
  return {
    t0: times.length ? Math.min(...times) : 0,
    t1: times.length ? Math.max(...times) : 0,
    runs: [...runs.values()],
    links,
  };
}
