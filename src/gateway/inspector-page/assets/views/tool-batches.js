// @ts-check
/*
 * The selected run's tool batches as timelines: one per turn, its groups one under the other
 * (a band where the calls of a group ran together), a bar per call coloured by its outcome,
 * a dashed bar while a call waited for another run's claim, and between groups the conflict
 * that kept them apart. In a replay, drawn as they were at the scrubber. While a bar grows the
 * view redraws itself every 100 ms; lit-html updates the bars in place, so a tooltip under the
 * mouse stays put.
 */
import { html, nothing, render } from '../vendor/lit-html/lit-html.js';
import { formatMs, plural } from '../format.js';
import { replayAt, selectedRunId, visibleEvents } from '../selectors.js';

/** @typedef {import('../wire-types.js').RunEvent} RunEvent */
/** @typedef {import('../wire-types.js').RunEventOf<'tool.scheduled'>} Scheduled */
/** @typedef {import('../wire-types.js').RunEventOf<'tool.waiting'>} Waiting */
/** @typedef {import('../wire-types.js').RunEventOf<'tool.finished'>} Finished */
/**
 * A call of a batch, with when it waited, started and ended (ms).
 * @typedef {Scheduled['claims'][number] & {
 *   index: number,
 *   start: number | undefined,
 *   end: number | undefined,
 *   waitStart?: number,
 *   waiting?: Waiting,
 *   finished: Finished | undefined,
 * }} Call
 */
/** @typedef {{ schedule: Scheduled, calls: Map<string, Call> }} Batch */

/**
 * The batches of a run's events, in order.
 * @param {readonly RunEvent[]} events
 * @returns {Batch[]}
 */
export function batchesOf(events) {
  /** @type {Batch[]} */
  const batches = [];
  /** @type {Batch | undefined} */
  let current;
  for (const event of events) {
    if (event.type === 'tool.scheduled') {
      /** @type {Batch} */
      const batch = { schedule: event, calls: new Map() };
      event.claims.forEach((claim, index) =>
        batch.calls.set(claim.callId, { ...claim, index, start: undefined, end: undefined, finished: undefined }),
      );
      batches.push(batch);
      current = batch;
    } else if (event.type === 'tool.waiting' || event.type === 'tool.started' || event.type === 'tool.finished') {
      const call = current && current.calls.get(event.callId);
      if (!call) continue;
      const at = Date.parse(event.at);
      // A wait for another run's claim: drawn before the call's own bar.
      if (event.type === 'tool.waiting') {
        call.waitStart = at;
        call.waiting = event;
      } else if (event.type === 'tool.started') call.start = at;
      else {
        call.end = at;
        call.finished = event;
        if (call.start === undefined) call.start = call.end;
      }
    } else if (event.type === 'turn.finished') {
      current = undefined;
    }
  }
  return batches;
}

/** @param {Call} call */
function outcomeOf(call) {
  if (!call.finished) return call.start === undefined ? 'waiting' : 'running';
  if (call.finished.synthetic) return 'synthetic';
  return call.finished.ok ? 'ok' : 'error';
}

/** @param {Call} call */
const running = (call) => (call.start !== undefined || call.waitStart !== undefined) && !call.finished;

/**
 * @param {Batch} batch
 * @param {number} now the end of bars still growing
 */
function batchView(batch, now) {
  const calls = [...batch.calls.values()];
  const scheduledAt = Date.parse(batch.schedule.at);
  /** @param {(number | undefined)[]} times */
  const known = (times) => /** @type {number[]} */ (times.filter((t) => t !== undefined));
  const t0 = Math.min(scheduledAt, ...known(calls.map((c) => (c.waitStart !== undefined ? c.waitStart : c.start))));
  const ends = calls.map((c) =>
    c.end !== undefined ? c.end : c.start !== undefined || c.waitStart !== undefined ? now : t0,
  );
  const span = Math.max(t0 + 1, ...ends) - t0;
  /** @param {number} t */
  const pct = (t) => `${(((t - t0) / span) * 100).toFixed(3)}%`;
  /** @param {number} a @param {number} b */
  const width = (a, b) => `${Math.max(0.4, ((b - a) / span) * 100).toFixed(3)}%`;
  const { groups, boundaries, mode, turn } = batch.schedule;

  /** @param {number} g */
  const boundaryView = (g) => {
    const boundary = g > 0 ? boundaries[g - 1] : undefined;
    if (!boundary) return nothing;
    const tip = `group ${g + 1} waits for group ${g}: ${boundary.next} conflicts with ${boundary.previous} — ${boundary.reason}`;
    return html`<div
      class="boundary"
      title=${tip}
      data-testid="timeline-boundary"
      data-reason=${boundary.reason}
      data-index=${boundary.index}
    >
      <span class="boundary-line" aria-hidden="true"></span><span class="boundary-text">waits: ${boundary.reason}</span
      ><span class="boundary-line" aria-hidden="true"></span>
    </div>`;
  };

  /** @param {Call} call @param {number} g */
  const callView = (call, g) => {
    const outcome = outcomeOf(call);
    const callEnd = call.end !== undefined ? call.end : now;
    const duration = call.start !== undefined ? callEnd - call.start : 0;
    const error =
      call.finished && call.finished.error ? ` · ${call.finished.error.code}: ${call.finished.error.message}` : '';
    const waitEnd = call.start !== undefined ? call.start : call.end !== undefined ? call.end : now;
    const waiting = call.waiting;
    const wait =
      call.waitStart === undefined || !waiting
        ? nothing
        : html`<div
            class="bar waiting"
            style="left:${pct(call.waitStart)};width:${width(call.waitStart, waitEnd)}"
            title="${
              `${call.tool} (${call.callId}) waited ${formatMs(waitEnd - call.waitStart)} ` +
              `for ${waiting.blockedBy.tool} (${waiting.blockedBy.callId}) of run ${waiting.blockedBy.runId}: ` +
              waiting.resource
            }"
            data-testid="timeline-wait"
            data-call-id=${call.callId}
            data-blocked-by=${waiting.blockedBy.runId}
            data-resource=${waiting.resource}
          ></div>`;
    const bar =
      call.start === undefined
        ? nothing
        : html`<div
            class="bar ${outcome}"
            style="left:${pct(call.start)};width:${width(call.start, callEnd)}"
            title="${call.tool} (${call.callId}) · ${outcome} · ${formatMs(duration)} · claim ${call.label}${error}"
            data-testid="timeline-bar"
            data-call-id=${call.callId}
            data-tool=${call.tool}
            data-group=${g}
            data-outcome=${outcome}
            data-start=${call.start}
            data-end=${call.end !== undefined ? call.end : ''}
          >
            <span class="bar-text">${formatMs(duration)}</span>
          </div>`;
    return html`<div class="row">
      <div class="row-label" title="${call.tool} · ${call.callId} · claim ${call.label}">
        <span class="tool">${call.tool}</span><span class="claim">${call.label}</span>
      </div>
      <div class="track">${wait}${bar}</div>
    </div>`;
  };

  /** @param {[number, number]} range @param {number} g */
  const groupView = ([start, end], g) => {
    const members = calls.slice(start, end);
    const gStarts = known(members.map((c) => c.start));
    const gEnds = known(members.map((c) => (c.end !== undefined ? c.end : c.start !== undefined ? now : undefined)));
    const band = gStarts.length
      ? html`<div
          class="band"
          style="left:${pct(Math.min(...gStarts))};width:${width(Math.min(...gStarts), Math.max(...gEnds))}"
        ></div>`
      : nothing;
    return html`${boundaryView(g)}
      <div class="group" data-testid="timeline-group" data-group=${g} data-size=${members.length}>
        <div class="group-label">
          group ${g + 1}<span>${members.length > 1 ? ` · ${members.length} in parallel` : ' · serial'}</span>
        </div>
        <div class="group-rows">
          <div class="band-layer">${band}</div>
          ${members.map((call) => callView(call, g))}
        </div>
      </div>`;
  };

  const finished = calls.every((c) => c.finished);
  return html`<div class="batch" data-testid="timeline-batch" data-turn=${turn}>
    <div class="batch-head">
      <strong>Turn ${turn + 1}</strong
      ><span>${`${plural(calls.length, 'call', 'calls')} · ${plural(groups.length, 'group', 'groups')} · ${mode}`}</span
      ><span class="batch-time">${finished ? formatMs(span) : 'running…'}</span>
    </div>
    ${groups.map(groupView)}
    <div class="axis">
      <div class="axis-pad"></div>
      <div class="axis-track">
        ${[0, 0.5, 1].map((f) => html`<span class="tick" style="left:${f * 100}%">${formatMs(span * f)}</span>`)}
      </div>
    </div>
  </div>`;
}

/**
 * @param {{ box: HTMLElement, store: import('../store.js').Store, redraw(): void }} options
 */
export function createToolBatches({ box, store, redraw }) {
  box.replaceChildren();
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let soon;
  return {
    render() {
      const state = store.state;
      const runId = selectedRunId(state);
      const run = runId ? state.runs.get(runId) : undefined;
      const batches = run ? batchesOf(visibleEvents(state, run)) : [];
      const replay = replayAt(state);
      if (batches.length === 0) {
        render(html`<p class="empty">${run ? 'No tool batch in this run yet.' : 'No run selected.'}</p>`, box);
        return;
      }
      const now = replay?.time ?? Date.now();
      render(
        batches.map((batch) => batchView(batch, now)),
        box,
      );
      // Bars still growing: drawn again in a moment (a replay stands still at its scrubber).
      const growing = !replay && batches.some((batch) => [...batch.calls.values()].some(running));
      if (growing && !soon)
        soon = setTimeout(() => {
          soon = undefined;
          redraw();
        }, 100);
    },
  };
}
