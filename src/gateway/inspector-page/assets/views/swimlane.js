// @ts-check
/*
 * Draws a session's story (session-story.js) as a swimlane: one row per run over a shared
 * time axis — a dashed line while its message waited, a bar while it ran (with a tick per
 * turn), a diamond where it read a steer, a cross where it was cancelled — and an arrow from
 * each interrupting message to the run it interrupted or superseded. Long idle stretches are
 * cut short (a break on the axis), so a busy minute and an idle hour fit one width.
 */
import { html, nothing, svg } from '../vendor/lit-html/lit-html.js';
import { formatDuration, shortId } from '../format.js';

/** @typedef {import('../session-story.js').Story} Story */
/** @typedef {import('../session-story.js').Lane} Lane */
/** @typedef {import('../session-story.js').Link} Link */
/** @typedef {import('../wire-types.js').RunSummary} RunSummary */
/** @typedef {{ from: number, to: number, cut: boolean, x: number, end: number }} Piece */
/** @typedef {{ at(t: number): number, breaks: Piece[], times: number[] }} Scale */

const ROW = 48;
const AXIS = 28;
const BREAK = 26;
const PAD = 14;
const MIN_GAP = 26;
const LABEL_WIDTH = 230;

/**
 * Time -> x over the story's moments (arrivals, starts, turns, steers, ends). Between two
 * moments the width follows the time they are apart, but never less than a few pixels, so
 * decisions a millisecond apart stay apart; a stretch in which no run waited or ran, longer
 * than a sixth of the whole (and than 2 s), is cut to BREAK pixels.
 * @param {Story} story
 * @param {number} t1
 * @param {number} width
 * @returns {Scale}
 */
function timeScale(story, t1, width) {
  const moments = new Set([story.t0, t1]);
  for (const run of story.runs) {
    for (const t of [run.arrivedAt, run.queuedAt, run.startedAt, run.endedAt]) if (t !== undefined) moments.add(t);
    for (const turn of run.turns) moments.add(turn.startedAt);
    for (const steer of run.steers) {
      moments.add(steer.at);
      if (steer.arrivedAt !== undefined) moments.add(steer.arrivedAt);
    }
  }
  const times = [...moments].filter((t) => t >= story.t0 && t <= t1).sort((a, b) => a - b);
  /** @param {number} from @param {number} to */
  const busy = (from, to) => story.runs.some((run) => run.arrivedAt <= from && (run.endedAt ?? t1) >= to);
  const threshold = Math.max(2000, (t1 - story.t0) / 6);
  const segments = times.slice(1).map((to, i) => {
    const from = times[i] ?? to;
    return { from, to, cut: to - from > threshold && !busy(from, to) };
  });
  const room = width - 2 * PAD - segments.filter((s) => s.cut).length * BREAK;
  const linear = segments.filter((s) => !s.cut);
  const minGap = Math.min(MIN_GAP, room / Math.max(1, 2 * linear.length));
  /** @param {number} perMs */
  const total = (perMs) => linear.reduce((sum, s) => sum + Math.max(minGap, (s.to - s.from) * perMs), 0);
  // The scale at which the segments fill the room, found by bisection (total grows with it).
  let low = 0;
  let high = room / Math.max(1, t1 - story.t0) + 1;
  for (let i = 0; i < 50; i++) {
    const mid = (low + high) / 2;
    if (total(mid) > room) high = mid;
    else low = mid;
  }
  let x = PAD;
  /** @type {Piece[]} */
  const placed = segments.map((segment) => {
    const span = segment.cut ? BREAK : Math.max(minGap, (segment.to - segment.from) * low);
    const piece = { ...segment, x, end: x + span };
    x += span;
    return piece;
  });
  /** @param {number} t */
  const at = (t) => {
    const piece = placed.find((p) => t <= p.to) ?? placed.at(-1);
    if (!piece) return PAD;
    if (t <= piece.from) return piece.x;
    if (t >= piece.to) return piece.end;
    if (piece.cut) return piece.x + BREAK / 2;
    return piece.x + ((t - piece.from) / (piece.to - piece.from)) * (piece.end - piece.x);
  };
  return { at, breaks: placed.filter((p) => p.cut), times };
}

/**
 * Time labels at moments at least 80 px apart (the scale is not linear, so ticks go where things happened).
 * @param {Scale} scale
 * @param {Story} story
 * @param {number} width
 */
function axis(scale, story, width) {
  const ticks = [];
  let last = -Infinity;
  for (const t of scale.times) {
    const x = scale.at(t);
    if (x - last < 80 || x > width - 40) continue;
    last = x;
    ticks.push(
      svg`<line class="axis-mark" x1=${x} x2=${x} y1=${AXIS - 9} y2=${AXIS - 3}></line><text
          class="axis-tick"
          x=${x}
          y=${AXIS - 12}
          text-anchor=${x === PAD ? 'start' : 'middle'}
        >+${formatDuration(t - story.t0)}</text>`,
    );
  }
  return svg`<line class="axis-line" x1=${PAD} x2=${width - PAD} y1=${AXIS - 6} y2=${AXIS - 6}></line>${ticks}${scale.breaks.map(
    (cut) =>
      svg`<g class="axis-break"><title>${formatDuration(cut.to - cut.from)} with nothing in this session</title><text
          x=${cut.x + BREAK / 2}
          y=${AXIS - 2}
          text-anchor="middle"
        >≈</text></g>`,
  )}`;
}

/** @param {string} text */
function quoted(text) {
  return `“${text.length > 28 ? `${text.slice(0, 27)}…` : text}”`;
}

/**
 * @param {Lane} run
 * @param {number} row
 * @param {Scale} scale
 * @param {number} t1
 */
function runRow(run, row, scale, t1) {
  const y = AXIS + row * ROW;
  const mid = y + ROW / 2 + 4;
  const waitedFrom = run.queuedAt ?? (run.startedAt === undefined ? run.arrivedAt : undefined);
  const until = run.startedAt ?? run.endedAt ?? t1;
  const wait =
    waitedFrom === undefined
      ? nothing
      : svg`<line
          class="lane-wait"
          x1=${scale.at(waitedFrom)}
          x2=${Math.max(scale.at(until), scale.at(waitedFrom) + 1)}
          y1=${mid}
          y2=${mid}
          data-testid="lane-wait"
        ><title>waited ${formatDuration(until - waitedFrom)}${
          run.queuedFor ? ` (${run.queuedFor === 'limits' ? 'for permits' : 'in the lane'})` : ''
        }</title></line>`;
  const end = run.endedAt ?? t1;
  const startedAt = run.startedAt;
  const ran =
    startedAt === undefined
      ? nothing
      : svg`<rect
            class="lane-bar state-${run.state ?? 'running'}"
            x=${scale.at(startedAt)}
            y=${mid - 8}
            width=${Math.max(3, scale.at(end) - scale.at(startedAt))}
            height="16"
            rx="4"
          ><title>ran ${formatDuration(end - startedAt)}${run.outcome ? `, ended ${run.outcome}` : ', still running'}</title></rect
          >${run.turns.map((turn, i) => {
            const from = scale.at(turn.startedAt);
            const next = run.turns[i + 1];
            const to = next ? scale.at(next.startedAt) : scale.at(end);
            return svg`${i > 0 ? svg`<line class="lane-turn" x1=${from} x2=${from} y1=${mid - 8} y2=${mid + 8}></line>` : nothing}<g
                class="lane-turn-label"
                ><title>turn ${turn.turn + 1}</title>${
                  to - from >= 16
                    ? svg`<text x=${(from + to) / 2} y=${mid + 4} text-anchor="middle">${String(turn.turn + 1)}</text>`
                    : nothing
                }</g
              >`;
          })}`;
  const steers = run.steers.map((steer) => {
    const x = scale.at(steer.at);
    const turn = steer.turn === undefined ? 'its next turn' : `turn ${steer.turn + 1}`;
    const top = mid - 15;
    const arrived = steer.arrivedAt === undefined ? undefined : scale.at(steer.arrivedAt);
    const before =
      steer.arrivedAt === undefined ? '' : ` (it arrived ${formatDuration(steer.at - steer.arrivedAt)} before)`;
    return svg`<g
      class="lane-steer"
      data-testid="lane-steer"
      data-steer-id=${steer.steerId}
      data-into=${run.runId}
      data-turn=${steer.turn ?? ''}
      ><title>a message steered into this run${before}, read at ${turn}: ${JSON.stringify(steer.text)}</title>${
        arrived === undefined
          ? nothing
          : svg`<path class="lane-steer-arrival" d="M ${arrived} ${top - 5} l 5 5 l -5 5 l -5 -5 z"></path><line
              class="lane-steer-wait"
              x1=${arrived + 5}
              x2=${x - 6}
              y1=${top}
              y2=${top}
            ></line>`
      }<path d="M ${x} ${top - 6} l 6 6 l -6 6 l -6 -6 z"></path><text x=${x + 9} y=${top + 4}
        >${quoted(steer.text)} → ${turn}</text
      ></g
    >`;
  });
  const endedAt = run.endedAt;
  const cross =
    (run.state === 'cancelled' || run.state === 'failed') && endedAt !== undefined
      ? svg`<g class="lane-end state-${run.state}"
          ><title>${run.state}: ${run.outcome}</title><path
            d="M ${scale.at(endedAt) - 5} ${mid - 5} l 10 10 M ${scale.at(endedAt) + 5} ${mid - 5} l -10 10"
          ></path
          ><text x=${scale.at(endedAt) + 8} y=${mid + 4}>${run.outcome}</text></g
        >`
      : nothing;
  return svg`<g
    class="lane-row"
    data-testid="lane-run"
    data-run-id=${run.runId}
    data-state=${run.state ?? (run.startedAt ? 'running' : 'queued')}
    data-outcome=${run.outcome ?? ''}
    data-cancelled-by=${run.cancelledBy?.by ?? ''}
    ><rect class="lane-bg${row % 2 ? ' odd' : ''}" x="0" y=${y} width="100%" height=${ROW}></rect><circle
      class="lane-arrival"
      cx=${scale.at(run.arrivedAt)}
      cy=${mid}
      r="3"
      ><title>the message arrived</title></circle
    >${wait}${ran}${steers}${cross}</g
  >`;
}

/**
 * An arrow from where the interrupting message arrived to the cross of the run it cancelled.
 * @param {Link} link
 * @param {number} from the interrupter's row
 * @param {number} to the cancelled run's row
 * @param {Lane} by
 * @param {Scale} scale
 */
function arrow(link, from, to, by, scale) {
  const x1 = scale.at(by.arrivedAt);
  const x2 = scale.at(link.at);
  const y1 = AXIS + from * ROW + ROW / 2 + 4;
  const y2 = AXIS + to * ROW + ROW / 2 + 4 + (from > to ? 7 : -7);
  const words = link.kind === 'interrupt' ? 'interrupted' : 'superseded';
  return svg`<g
    class="lane-link ${link.kind}"
    data-testid="lane-link"
    data-kind=${link.kind}
    data-by=${link.by}
    data-run=${link.run}
    ><title>${shortId(link.by)}'s message ${words} ${shortId(link.run)}</title><path
      d="M ${x1} ${y1} C ${x1} ${(y1 + y2) / 2} ${x2} ${(y1 + y2) / 2} ${x2} ${y2}"
      marker-end="url(#arrow-${link.kind})"
    ></path
  ></g>`;
}

function arrowHeads() {
  return svg`<defs>${['interrupt', 'supersede'].map(
    (kind) =>
      svg`<marker
        id="arrow-${kind}"
        viewBox="0 0 8 8"
        refX="7"
        refY="4"
        markerWidth="7"
        markerHeight="7"
        orient="auto-start-reverse"
        ><path class="arrow-${kind}" d="M 0 0 L 8 4 L 0 8 z"></path
      ></marker>`,
  )}</defs>`;
}

/**
 * The swimlane of `story`, `width` pixels wide in all. `summaries` (runId -> the run's row from
 * runs.query) gives each lane its message; `now` the end of the axis while runs are still going.
 * A steer with `arrivedAt` also shows when its message came.
 * @param {Story} story
 * @param {{ summaries: Map<string, RunSummary>, width: number, now: number, links: import('../wire-types.js').Links }} options
 */
export function swimlane(story, { summaries, width: boxWidth, now, links }) {
  if (story.runs.length === 0) return html`<p class="empty">No run of this session is stored yet.</p>`;
  const open = story.runs.some((run) => run.endedAt === undefined);
  const t1 = open ? Math.max(story.t1, now) : story.t1;
  const width = Math.max(420, boxWidth - LABEL_WIDTH - 4);
  const scale = timeScale(story, t1, width);
  const rows = new Map(story.runs.map((run, i) => [run.runId, i]));
  const byId = new Map(story.runs.map((run) => [run.runId, run]));
  const height = AXIS + story.runs.length * ROW + 6;
  const labels = story.runs.map((run) => {
    const summary = summaries.get(run.runId);
    const outcome = run.outcome ?? (run.startedAt ? 'running' : 'waiting');
    return html`<a
      class="lane-label"
      href=${links.run(run.runId)}
      style="height:${ROW}px"
      title="replay run ${run.runId}"
      data-testid="lane-label"
      data-run-id=${run.runId}
      ><span class="lane-label-line"
        ><span class="run-id">${shortId(run.runId)}</span
        ><span class="pill outcome outcome-${run.state ?? 'running'}">${outcome}</span></span
      ><span class="lane-label-input">${summary ? summary.input : ''}</span></a
    >`;
  });
  const arrows = story.links.map((link) => {
    const from = rows.get(link.by);
    const to = rows.get(link.run);
    const by = byId.get(link.by);
    return from === undefined || to === undefined || !by ? nothing : arrow(link, from, to, by, scale);
  });
  return html`<div class="lane-grid" style="grid-template-columns:${LABEL_WIDTH}px minmax(0,1fr)">
    <div class="lane-labels" style="padding-top:${AXIS}px">${labels}</div>
    <div class="lane-track">
      <svg
        class="lane-svg"
        width=${width}
        height=${height}
        viewBox="0 0 ${width} ${height}"
        role="img"
        aria-label="the session over time"
      >
        ${arrowHeads()}${axis(scale, story, width)}${story.runs.map((run, i) => runRow(run, i, scale, t1))}${arrows}
      </svg>
    </div>
  </div>`;
}
