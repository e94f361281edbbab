// @ts-check
/*
 * The selected run's events, one row each, stuck to the bottom while it is scrolled there. In a
 * replay the rows after the scrubber are dimmed and the one it stands on is marked; clicking a
 * row moves the scrubber there.
 */
import { html, render } from '../vendor/lit-html/lit-html.js';
import { shortId } from '../format.js';
import { replayAt, selectedRunId, sortedEvents } from '../selectors.js';

/** @typedef {import('../wire-types.js').RunEvent} RunEvent */

/**
 * One line about an event, by its type.
 * @param {RunEvent} event
 * @returns {string}
 */
export function summary(event) {
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
    case 'tool.finished': {
      const outcome = event.ok ? 'ok' : `error ${event.error ? event.error.code : ''}`;
      return `${event.callId} · ${outcome}${event.synthetic ? ' (synthetic)' : ''} · ${event.durationMs} ms`;
    }
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

/**
 * @param {RunEvent} event
 * @param {number} t0
 * @param {string} replayClass
 */
function row(event, t0, replayClass) {
  const detail = summary(event);
  return html`<div
    class="event kind-${event.type.split('.')[0]} type-${event.type.replace('.', '-')}${replayClass}"
    data-testid="event-row"
    data-type=${event.type}
    data-seq=${event.seq}
  >
    <span class="seq">${event.seq}</span><span class="at" title=${event.at}>+${Date.parse(event.at) - t0} ms</span
    ><span class="type">${event.type}</span><span class="detail" title=${detail}>${detail}</span>
  </div>`;
}

/**
 * @param {{ box: HTMLElement, meta: HTMLElement, store: import('../store.js').Store }} options
 */
export function createEventLog({ box, meta, store }) {
  box.replaceChildren();
  /** What was drawn last: the run, its event count, the replay's scrubber. */
  let drawn = { runId: '', count: 0, index: /** @type {number | undefined} */ (undefined) };
  box.addEventListener('click', (event) => {
    const replay = replayAt(store.state);
    const target = /** @type {Element} */ (event.target).closest('[data-testid="event-row"]');
    if (!target || !replay || !target.parentElement) return;
    const rows = [...target.parentElement.querySelectorAll('[data-testid="event-row"]')];
    store.replaySeek(rows.indexOf(target) + 1, replay.events.length);
  });
  return {
    render() {
      const state = store.state;
      const runId = selectedRunId(state);
      const run = runId ? state.runs.get(runId) : undefined;
      if (!run) {
        render(html`<p class="empty">No run yet. Submit one and it appears here.</p>`, box);
        meta.textContent = '';
        drawn = { runId: '', count: 0, index: undefined };
        return;
      }
      const events = sortedEvents(run);
      const replay = replayAt(state);
      const index = replay ? replay.index : undefined;
      meta.textContent = `run ${shortId(run.runId)} · session ${run.sessionId || '?'} · ${events.length} events`;
      if (drawn.runId === run.runId && drawn.count === events.length && drawn.index === index) return;
      const stick = box.scrollTop + box.clientHeight >= box.scrollHeight - 24;
      const t0 = events[0] ? Date.parse(events[0].at) : 0;
      /** @param {number} i */
      const replayClass = (i) =>
        index === undefined ? '' : i >= index ? ' future' : i === index - 1 ? ' current' : '';
      render(
        events.length
          ? events.map((event, i) => row(event, t0, replayClass(i)))
          : html`<p class="empty">No events seen for this run yet.</p>`,
        box,
      );
      if (index !== undefined) {
        const current = box.querySelector('.event.current');
        if (current) current.scrollIntoView({ block: 'nearest' });
        else box.scrollTop = 0;
      } else if (stick || drawn.runId !== run.runId) box.scrollTop = box.scrollHeight;
      drawn = { runId: run.runId, count: events.length, index };
    },
  };
}
