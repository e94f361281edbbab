/*
 * Draws a session's story (session-story.js) as a swimlane: one row per run over a shared
 * time axis — a dashed line while its message waited, a bar while it ran (with a tick per
 * turn), a diamond where it read a steer, a cross where it was cancelled — and an arrow from
 * each interrupting message to the run it interrupted or superseded. Long idle stretches are
 * cut short (a break on the axis), so a busy minute and an idle hour fit one width.
 */
((inspector) => {
  'use strict';

  const { h, svg, shortId, formatDuration } = inspector;
  const ROW = 48;
  const AXIS = 28;
  const BREAK = 26;
  const PAD = 14;
  const MIN_GAP = 26;

  /**
   * Time -> x over the story's moments (arrivals, starts, turns, steers, ends). Between two
   * moments the width follows the time they are apart, but never less than a few pixels, so
   * decisions a millisecond apart stay apart; a stretch in which no run waited or ran, longer
   * than a sixth of the whole (and than 2 s), is cut to BREAK pixels.
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
    const busy = (from, to) => story.runs.some((run) => run.arrivedAt <= from && (run.endedAt ?? t1) >= to);
    const threshold = Math.max(2000, (t1 - story.t0) / 6);
    const segments = times.slice(1).map((to, i) => {
      const from = times[i];
      return { from, to, cut: to - from > threshold && !busy(from, to) };
    });
    const room = width - 2 * PAD - segments.filter((s) => s.cut).length * BREAK;
    const linear = segments.filter((s) => !s.cut);
    const minGap = Math.min(MIN_GAP, room / Math.max(1, 2 * linear.length));
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
    const placed = segments.map((segment) => {
      const span = segment.cut ? BREAK : Math.max(minGap, (segment.to - segment.from) * low);
      const piece = { ...segment, x, end: x + span };
      x += span;
      return piece;
    });
    const at = (t) => {
      if (placed.length === 0) return PAD;
      const piece = placed.find((p) => t <= p.to) ?? placed.at(-1);
      if (t <= piece.from) return piece.x;
      if (t >= piece.to) return piece.end;
      if (piece.cut) return piece.x + BREAK / 2;
      return piece.x + ((t - piece.from) / (piece.to - piece.from)) * (piece.end - piece.x);
    };
    return { at, breaks: placed.filter((p) => p.cut), times };
  }

  /** Time labels at moments at least 80 px apart (the scale is not linear, so ticks go where things happened). */
  function axis(scale, story, width) {
    const nodes = [svg('line', { class: 'axis-line', x1: PAD, x2: width - PAD, y1: AXIS - 6, y2: AXIS - 6 })];
    let last = -Infinity;
    for (const t of scale.times) {
      const x = scale.at(t);
      if (x - last < 80 || x > width - 40) continue;
      last = x;
      nodes.push(svg('line', { class: 'axis-mark', x1: x, x2: x, y1: AXIS - 9, y2: AXIS - 3 }));
      nodes.push(
        svg(
          'text',
          { class: 'axis-tick', x, y: AXIS - 12, 'text-anchor': x === PAD ? 'start' : 'middle' },
          `+${formatDuration(t - story.t0)}`,
        ),
      );
    }
    for (const cut of scale.breaks) {
      nodes.push(
        svg(
          'g',
          { class: 'axis-break' },
          svg('title', null, `${formatDuration(cut.to - cut.from)} with nothing in this session`),
          svg('text', { x: cut.x + BREAK / 2, y: AXIS - 2, 'text-anchor': 'middle' }, '≈'),
        ),
      );
    }
    return nodes;
  }

  function quoted(text) {
    return `“${text.length > 28 ? `${text.slice(0, 27)}…` : text}”`;
  }

  function runRow(run, row, scale, t1) {
    const y = AXIS + row * ROW;
    const mid = y + ROW / 2 + 4;
    const parts = [svg('rect', { class: `lane-bg${row % 2 ? ' odd' : ''}`, x: 0, y, width: '100%', height: ROW })];
    const waitedFrom = run.queuedAt ?? (run.startedAt === undefined ? run.arrivedAt : undefined);
    parts.push(
      svg(
        'circle',
        { class: 'lane-arrival', cx: scale.at(run.arrivedAt), cy: mid, r: 3 },
        svg('title', null, 'the message arrived'),
      ),
    );
    if (waitedFrom !== undefined) {
      const until = run.startedAt ?? run.endedAt ?? t1;
      parts.push(
        svg(
          'line',
          {
            class: 'lane-wait',
            x1: scale.at(waitedFrom),
            x2: Math.max(scale.at(until), scale.at(waitedFrom) + 1),
            y1: mid,
            y2: mid,
            'data-testid': 'lane-wait',
          },
          svg(
            'title',
            null,
            `waited ${formatDuration(until - waitedFrom)}${run.queuedFor ? ` (${run.queuedFor === 'limits' ? 'for permits' : 'in the lane'})` : ''}`,
          ),
        ),
      );
    }
    if (run.startedAt !== undefined) {
      const end = run.endedAt ?? t1;
      const x = scale.at(run.startedAt);
      parts.push(
        svg(
          'rect',
          {
            class: `lane-bar state-${run.state ?? 'running'}`,
            x,
            y: mid - 8,
            width: Math.max(3, scale.at(end) - x),
            height: 16,
            rx: 4,
          },
          svg(
            'title',
            null,
            `ran ${formatDuration(end - run.startedAt)}${run.outcome ? `, ended ${run.outcome}` : ', still running'}`,
          ),
        ),
      );
      run.turns.forEach((turn, i) => {
        const from = scale.at(turn.startedAt);
        const to = i + 1 < run.turns.length ? scale.at(run.turns[i + 1].startedAt) : scale.at(end);
        if (i > 0) parts.push(svg('line', { class: 'lane-turn', x1: from, x2: from, y1: mid - 8, y2: mid + 8 }));
        parts.push(
          svg(
            'g',
            { class: 'lane-turn-label' },
            svg('title', null, `turn ${turn.turn + 1}`),
            to - from >= 16
              ? svg('text', { x: (from + to) / 2, y: mid + 4, 'text-anchor': 'middle' }, String(turn.turn + 1))
              : null,
          ),
        );
      });
    }
    for (const steer of run.steers) {
      const x = scale.at(steer.at);
      const turn = steer.turn === undefined ? 'its next turn' : `turn ${steer.turn + 1}`;
      const top = mid - 15;
      const arrived = steer.arrivedAt === undefined ? undefined : scale.at(steer.arrivedAt);
      parts.push(
        svg(
          'g',
          {
            class: 'lane-steer',
            'data-testid': 'lane-steer',
            'data-steer-id': steer.steerId,
            'data-into': run.runId,
            'data-turn': steer.turn ?? '',
          },
          svg(
            'title',
            null,
            `a message steered into this run${steer.arrivedAt === undefined ? '' : ` (it arrived ${formatDuration(steer.at - steer.arrivedAt)} before)`}, read at ${turn}: ${JSON.stringify(steer.text)}`,
          ),
          arrived === undefined
            ? null
            : svg('path', { class: 'lane-steer-arrival', d: `M ${arrived} ${top - 5} l 5 5 l -5 5 l -5 -5 z` }),
          arrived === undefined
            ? null
            : svg('line', { class: 'lane-steer-wait', x1: arrived + 5, x2: x - 6, y1: top, y2: top }),
          svg('path', { d: `M ${x} ${top - 6} l 6 6 l -6 6 l -6 -6 z` }),
          svg('text', { x: x + 9, y: top + 4 }, `${quoted(steer.text)} → ${turn}`),
        ),
      );
    }
    if (run.state === 'cancelled' || run.state === 'failed') {
      const x = scale.at(run.endedAt);
      parts.push(
        svg(
          'g',
          { class: `lane-end state-${run.state}` },
          svg('title', null, `${run.state}: ${run.outcome}`),
          svg('path', { d: `M ${x - 5} ${mid - 5} l 10 10 M ${x + 5} ${mid - 5} l -10 10` }),
          svg('text', { x: x + 8, y: mid + 4 }, run.outcome),
        ),
      );
    }
    return svg(
      'g',
      {
        class: 'lane-row',
        'data-testid': 'lane-run',
        'data-run-id': run.runId,
        'data-state': run.state ?? (run.startedAt ? 'running' : 'queued'),
        'data-outcome': run.outcome ?? '',
        'data-cancelled-by': run.cancelledBy?.by ?? '',
      },
      ...parts,
    );
  }

  /** An arrow from where the interrupting message arrived to the cross of the run it cancelled. */
  function link(link, rows, byId, scale) {
    const from = rows.get(link.by);
    const to = rows.get(link.run);
    const x1 = scale.at(byId.get(link.by).arrivedAt);
    const x2 = scale.at(link.at);
    const y1 = AXIS + from * ROW + ROW / 2 + 4;
    const y2 = AXIS + to * ROW + ROW / 2 + 4 + (from > to ? 7 : -7);
    const words = link.kind === 'interrupt' ? 'interrupted' : 'superseded';
    return svg(
      'g',
      {
        class: `lane-link ${link.kind}`,
        'data-testid': 'lane-link',
        'data-kind': link.kind,
        'data-by': link.by,
        'data-run': link.run,
      },
      svg('title', null, `${shortId(link.by)}'s message ${words} ${shortId(link.run)}`),
      svg('path', {
        d: `M ${x1} ${y1} C ${x1} ${(y1 + y2) / 2} ${x2} ${(y1 + y2) / 2} ${x2} ${y2}`,
        'marker-end': `url(#arrow-${link.kind})`,
      }),
    );
  }

  function arrowHeads() {
    return svg(
      'defs',
      null,
      ...['interrupt', 'supersede'].map((kind) =>
        svg(
          'marker',
          {
            id: `arrow-${kind}`,
            viewBox: '0 0 8 8',
            refX: 7,
            refY: 4,
            markerWidth: 7,
            markerHeight: 7,
            orient: 'auto-start-reverse',
          },
          svg('path', { class: `arrow-${kind}`, d: 'M 0 0 L 8 4 L 0 8 z' }),
        ),
      ),
    );
  }

  /**
   * Draws `story` into `box`. `summaries` (runId -> the run's row from runs.query) gives each
   * lane its message; `links.run(id)` the address of a run's replay; `now` the end of the axis
   * while runs are still going. A steer with `arrivedAt` also shows when its message came.
   */
  function renderSwimlane(box, story, { summaries, links, now }) {
    if (story.runs.length === 0) {
      box.replaceChildren(h('p', { class: 'empty' }, 'No run of this session is stored yet.'));
      return;
    }
    const open = story.runs.some((run) => run.endedAt === undefined);
    const t1 = open ? Math.max(story.t1, now) : story.t1;
    const labelWidth = 230;
    const width = Math.max(420, box.clientWidth - labelWidth - 4);
    const scale = timeScale(story, t1, width);
    const rows = new Map(story.runs.map((run, i) => [run.runId, i]));
    const byId = new Map(story.runs.map((run) => [run.runId, run]));
    const height = AXIS + story.runs.length * ROW + 6;
    const labels = story.runs.map((run) => {
      const summary = summaries.get(run.runId);
      const outcome = run.outcome ?? (run.startedAt ? 'running' : 'waiting');
      return h(
        'a',
        {
          class: 'lane-label',
          href: links.run(run.runId),
          style: `height:${ROW}px`,
          title: `replay run ${run.runId}`,
          dataset: { testid: 'lane-label', runId: run.runId },
        },
        h(
          'span',
          { class: 'lane-label-line' },
          h('span', { class: 'run-id' }, shortId(run.runId)),
          h('span', { class: `pill outcome outcome-${run.state ?? 'running'}` }, outcome),
        ),
        h('span', { class: 'lane-label-input' }, summary ? summary.input : ''),
      );
    });
    const chart = svg(
      'svg',
      {
        class: 'lane-svg',
        width,
        height,
        viewBox: `0 0 ${width} ${height}`,
        role: 'img',
        'aria-label': 'the session over time',
      },
      arrowHeads(),
      ...axis(scale, story, width),
      ...story.runs.map((run, i) => runRow(run, i, scale, t1)),
      ...story.links.filter((l) => rows.has(l.by) && rows.has(l.run)).map((l) => link(l, rows, byId, scale)),
    );
    box.replaceChildren(
      h(
        'div',
        { class: 'lane-grid', style: `grid-template-columns:${labelWidth}px minmax(0,1fr)` },
        h('div', { class: 'lane-labels', style: `padding-top:${AXIS}px` }, ...labels),
        h('div', { class: 'lane-track' }, chart),
      ),
    );
  }

  Object.assign(inspector, { renderSwimlane });
})((globalThis.SwitchyardInspector ??= {}));
