// @ts-check
/*
 * The limiter's gauges (engine.snapshot, polled): global permits, runs waiting and running,
 * permits per agent, and each session's wait lane; and the summary in the top bar.
 */
import { html, nothing, render } from '../vendor/lit-html/lit-html.js';
import { plural } from '../format.js';

/** @typedef {import('../wire-types.js').EngineSnapshot} EngineSnapshot */

/**
 * @param {number} inUse
 * @param {number} max
 * @param {string} testid
 * @param {string} [agent]
 */
function meter(inUse, max, testid, agent) {
  const ratio = max > 0 ? Math.min(1, inUse / max) : 0;
  return html`<div
    class="meter${ratio >= 1 ? ' full' : ''}"
    data-testid=${testid}
    data-in-use=${inUse}
    data-max=${max}
    data-agent=${agent ?? nothing}
  >
    <div class="meter-fill" style="width:${(ratio * 100).toFixed(1)}%"></div>
  </div>`;
}

/** @param {EngineSnapshot} snap */
function gauges(snap) {
  const agents = Object.entries(snap.perAgent);
  const lanes = snap.sessions;
  return html`<div class="gauge">
      <div class="gauge-head"><span>global permits</span><b>${snap.global.inUse} / ${snap.global.max}</b></div>
      ${meter(snap.global.inUse, snap.global.max, 'gauge-global')}
    </div>
    <div class="gauge-row">
      <div class="stat" data-testid="gauge-waiting" data-value=${snap.waiting}>
        <b>${snap.waiting}</b><span>runs waiting</span>
      </div>
      <div class="stat" data-testid="gauge-running" data-value=${snap.running.length}>
        <b>${snap.running.length}</b><span>running</span>
      </div>
    </div>
    <div class="gauge-title">per agent</div>
    ${
      agents.length
        ? agents.map(
            ([agentId, a]) =>
              html`<div class="gauge small">
                <div class="gauge-head"><span>${agentId}</span><b>${a.inUse} / ${a.max}</b></div>
                ${meter(a.inUse, a.max, 'gauge-agent', agentId)}
              </div>`,
          )
        : html`<p class="muted">no agent holds a permit</p>`
    }
    <div class="gauge-title">wait lanes</div>
    ${
      lanes.length
        ? lanes.map(
            (s) =>
              html`<div class="lane" data-testid="gauge-lane" data-session=${s.sessionId} data-depth=${s.laneDepth}>
                <span class="lane-name" title=${s.sessionId}>${s.sessionId}</span>
                <span class="lane-active${s.activeRunId ? ' busy' : ''}" title=${s.activeRunId || 'idle'}
                  >${s.activeRunId ? 'busy' : 'idle'}</span
                >
                <span class="lane-depth"
                  >${Array.from({ length: Math.min(s.laneDepth, 12) }, () => html`<i></i>`)}<b>${s.laneDepth}</b></span
                >
              </div>`,
          )
        : html`<p class="muted">no session</p>`
    }`;
}

/**
 * @param {{ gauges: HTMLElement, summary: HTMLElement }} boxes
 * @param {Readonly<import('../store.js').State>} state
 */
export function renderLimiter(boxes, state) {
  const snap = state.snapshot;
  render(snap ? gauges(snap) : html`<p class="empty">Waiting for the engine…</p>`, boxes.gauges);
  if (snap)
    boxes.summary.textContent = `${snap.running.length} running · ${snap.waiting} waiting · ${plural(snap.sessions.length, 'session', 'sessions')}`;
}
