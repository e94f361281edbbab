/*
 * Draws a laid-out statechart as a standalone SVG (light theme). Every state is a
 * `<g class="sc-state" data-state-id="…">`, so a page lights up active states by adding the
 * class `sc-active` (and `sc-current` on the innermost ones); the styles for both ship inside.
 * A container's title is a separate `<g class="sc-heading" data-heading-of="…">` on top.
 */
import type { ElkPoint } from 'elkjs/lib/elk-api.js';
import { METRICS, type LaidOutEdge, type LaidOutState, type StatechartLayout } from './layout.js';

const FONT = `'Segoe UI', 'Helvetica Neue', Helvetica, Arial, 'Liberation Sans', sans-serif`;

const STYLE = `
.sc-root { font-family: ${FONT}; }
.sc-state > .sc-box { fill: #ffffff; stroke: #94a3b8; stroke-width: 1.25; }
.sc-state.sc-compound > .sc-box, .sc-state.sc-parallel > .sc-box { fill: #f8fafc; stroke: #cbd5e1; }
.sc-state.sc-machine > .sc-box { fill: #fdfdfe; stroke: #e2e8f0; }
.sc-state.sc-final > .sc-inner { fill: none; stroke: #94a3b8; stroke-width: 1; }
.sc-title { font-size: ${METRICS.titleSize}px; font-weight: 600; fill: #0f172a; }
.sc-heading.sc-machine > .sc-title { fill: #475569; letter-spacing: 0.02em; }
.sc-line { font-size: ${METRICS.lineSize}px; fill: #475569; }
.sc-line.sc-invoke { font-style: italic; fill: #7c3aed; }
.sc-heading text { paint-order: stroke; stroke: #ffffff; stroke-opacity: 0.9; stroke-width: 4px; stroke-linejoin: round; }
.sc-state .sc-rule { stroke: #e2e8f0; stroke-width: 1; }
.sc-edge path { fill: none; stroke: #64748b; stroke-width: 1.25; }
.sc-edge .sc-label-bg { fill: #ffffff; fill-opacity: 0.92; stroke: #e2e8f0; stroke-width: 0.75; }
.sc-edge text { font-size: ${METRICS.edgeLabelSize}px; fill: #334155; }
.sc-arrow { fill: #64748b; }
.sc-initial circle { fill: #334155; }
.sc-initial path { fill: none; stroke: #334155; stroke-width: 1.25; }
.sc-state.sc-active > .sc-box { stroke: #2563eb; stroke-width: 2; fill: #eff6ff; }
.sc-state.sc-current > .sc-box { stroke: #1d4ed8; stroke-width: 2.5; fill: #dbeafe; }
.sc-state.sc-current > .sc-inner { stroke: #1d4ed8; }
.sc-state.sc-active > .sc-title, .sc-heading.sc-active > .sc-title { fill: #1d4ed8; }
`;

function escapeXml(text: string): string {
  return text.replace(
    /[<>&"']/g,
    (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&#39;' })[c] ?? c,
  );
}

const n = (value: number) => Math.round(value * 10) / 10;

/** An orthogonal polyline with softened corners. */
function roundedPath(points: ElkPoint[], radius = 6): string {
  const [first, ...rest] = points;
  if (!first) return '';
  let d = `M${n(first.x)},${n(first.y)}`;
  for (let i = 0; i < rest.length; i++) {
    const at = rest[i]!;
    const prev = i === 0 ? first : rest[i - 1]!;
    const next = rest[i + 1];
    if (!next) {
      d += ` L${n(at.x)},${n(at.y)}`;
      continue;
    }
    const inLen = Math.hypot(at.x - prev.x, at.y - prev.y);
    const outLen = Math.hypot(next.x - at.x, next.y - at.y);
    const r = Math.min(radius, inLen / 2, outLen / 2);
    const before = { x: at.x - ((at.x - prev.x) / (inLen || 1)) * r, y: at.y - ((at.y - prev.y) / (inLen || 1)) * r };
    const after = { x: at.x + ((next.x - at.x) / (outLen || 1)) * r, y: at.y + ((next.y - at.y) / (outLen || 1)) * r };
    d += ` L${n(before.x)},${n(before.y)} Q${n(at.x)},${n(at.y)} ${n(after.x)},${n(after.y)}`;
  }
  return d;
}

const isContainer = (state: LaidOutState) => state.type === 'compound' || state.type === 'parallel';

/** The title and the listed lines of a state; a container's are left-aligned in its header. */
function stateText(state: LaidOutState): string[] {
  const { x, y, width, height } = state;
  const parts: string[] = [];
  const titleY = y + METRICS.headerHeight / 2 + METRICS.titleSize * 0.36;
  if (isContainer(state)) {
    parts.push(`<text class="sc-title" x="${n(x + METRICS.padX)}" y="${n(titleY)}">${escapeXml(state.label)}</text>`);
  } else {
    const ty = state.lines.length > 0 ? titleY : y + height / 2 + METRICS.titleSize * 0.36;
    parts.push(
      `<text class="sc-title" x="${n(x + width / 2)}" y="${n(ty)}" text-anchor="middle">${escapeXml(state.label)}</text>`,
    );
  }
  state.lines.forEach((line, i) => {
    const ly = y + METRICS.headerHeight + (i + 1) * METRICS.lineHeight;
    parts.push(
      `<text class="sc-line sc-${line.kind}" x="${n(x + METRICS.padX)}" y="${n(ly)}">${escapeXml(line.text)}</text>`,
    );
  });
  return parts;
}

function renderState(state: LaidOutState, isMachine: boolean): string {
  const classes = ['sc-state', `sc-${state.type}`, ...(isMachine ? ['sc-machine'] : [])].join(' ');
  const { x, y, width, height } = state;
  const parts: string[] = [`<title>${escapeXml(state.id)}</title>`];
  parts.push(
    `<rect class="sc-box" x="${n(x)}" y="${n(y)}" width="${n(width)}" height="${n(height)}" rx="${isContainer(state) ? 10 : 8}"/>`,
  );
  if (state.type === 'final') {
    parts.push(
      `<rect class="sc-inner" x="${n(x + 3.5)}" y="${n(y + 3.5)}" width="${n(width - 7)}" height="${n(height - 7)}" rx="5"/>`,
    );
  }
  if (state.lines.length > 0) {
    const ruleY = y + METRICS.headerHeight;
    parts.push(`<line class="sc-rule" x1="${n(x + 8)}" y1="${n(ruleY)}" x2="${n(x + width - 8)}" y2="${n(ruleY)}"/>`);
  }
  // A container's text is drawn after the edges (see renderStatechartSvg): edges may cross its header.
  if (!isContainer(state)) parts.push(...stateText(state));
  return `<g class="${classes}" data-state-id="${escapeXml(state.id)}">${parts.join('')}</g>`;
}

function renderHeading(state: LaidOutState, isMachine: boolean): string {
  return `<g class="sc-heading${isMachine ? ' sc-machine' : ''}" data-heading-of="${escapeXml(state.id)}">${stateText(state).join('')}</g>`;
}

function renderEdge(edge: LaidOutEdge, markerId: string): string {
  const parts = [`<path d="${roundedPath(edge.points)}" marker-end="url(#${markerId})"/>`];
  const box = edge.labelBox;
  if (box && edge.labels.length > 0) {
    parts.push(
      `<rect class="sc-label-bg" x="${n(box.x)}" y="${n(box.y)}" width="${n(box.width)}" height="${n(box.height)}" rx="4"/>`,
    );
    edge.labels.forEach((label, i) => {
      const ly = box.y + 2 + (i + 1) * METRICS.edgeLabelLineHeight - 4;
      parts.push(`<text x="${n(box.x + box.width / 2)}" y="${n(ly)}" text-anchor="middle">${escapeXml(label)}</text>`);
    });
  }
  return `<g class="sc-edge" data-source="${escapeXml(edge.source)}" data-target="${escapeXml(edge.target)}">${parts.join('')}</g>`;
}

export function renderStatechartSvg(layout: StatechartLayout): string {
  const markerId = `sc-arrow-${layout.machineId.replace(/[^A-Za-z0-9_-]/g, '_')}`;
  const depth = (state: LaidOutState): number => state.id.split('.').length;
  const states = [...layout.states].sort((a, b) => depth(a) - depth(b));
  const root = layout.states.find((s) => s.parent === undefined);
  const width = Math.ceil(layout.width);
  const height = Math.ceil(layout.height);
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" class="sc-root" data-machine="${escapeXml(layout.machineId)}" ` +
      `width="${width}" height="${height}" viewBox="0 0 ${width} ${height}">`,
    `<style>${STYLE}</style>`,
    `<defs><marker id="${markerId}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" markerHeight="8" ` +
      `orient="auto-start-reverse"><path class="sc-arrow" d="M0,0 L10,5 L0,10 z"/></marker></defs>`,
    `<rect width="100%" height="100%" fill="#ffffff"/>`,
    ...states.map((state) => renderState(state, state === root)),
    ...layout.edges.map((edge) => renderEdge(edge, markerId)),
    ...states.filter(isContainer).map((state) => renderHeading(state, state === root)),
    ...layout.initials.map(
      (marker) =>
        `<g class="sc-initial" data-initial-of="${escapeXml(marker.target)}">` +
        `<circle cx="${n(marker.center.x)}" cy="${n(marker.center.y)}" r="${METRICS.initialSize / 2}"/>` +
        `<path d="${roundedPath(marker.points)}" marker-end="url(#${markerId})"/></g>`,
    ),
    `</svg>`,
  ].join('\n');
}
