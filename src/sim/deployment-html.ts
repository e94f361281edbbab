/*
 * A deployment simulation as one self-contained HTML page (no script, no fetch, inline SVG):
 * a table per configuration, run-latency CDFs, lane depth and permits in use over time, the
 * limiter's utilisation, the invariant checks, and what the model assumes.
 */
import type { DeploymentReport } from './simulate-deployment.js';
import type { DeploymentMetrics, Percentiles } from './deployment-metrics.js';

export interface LabelledReport {
  label: string;
  report: DeploymentReport;
}

const COLOURS = ['#2563eb', '#dc2626', '#059669', '#d97706'];
const W = 520;
const H = 220;
const PAD = { left: 52, right: 12, top: 12, bottom: 34 };

export const ASSUMPTIONS = [
  'Arrivals are independent (Poisson per agent, at the recorded rate of each hour of the day, times the scale).',
  'Model latency, turns per run, batch sizes, tool durations and approval waits are sampled from history, independently of load and of each other.',
  'No model-quality effects: a configuration never changes what the model answers or how many turns it takes.',
  "Tools are the simulator's synthetic ones with the recorded tools' claim kinds (shared, paths, nodes, global); " +
    'each session works in its own workspace.',
  'Approvals are modelled as time added to the call; messages keep their recorded busy policy ' +
    '(steer, interrupt, queue, collect, reject, rollback, each replayed as itself) unless one is forced. ' +
    'A message refused with session_busy leaves no record, so a history under-counts reject messages.',
  "A cluster's processes share one store and one limiter (the limiter chart; the Redis limiter of a real cluster " +
    'grants in arrival order); a session stays on the process its first message reached; a crashed process is ' +
    'started again at once, and its sessions are taken over by the processes that survived it after ' +
    '[cluster] lease_seconds — messages for them wait until then.',
];

export function deploymentHtml(reports: LabelledReport[], title = 'Switchyard deployment simulation'): string {
  const first = reports[0]!.report;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${esc(title)}</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#111;max-width:1150px}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:22px 0 8px}
table{border-collapse:collapse;font-variant-numeric:tabular-nums}td,th{border-bottom:1px solid #ddd;padding:3px 10px;text-align:right}
th:first-child,td:first-child{text-align:left}.grid{display:flex;flex-wrap:wrap;gap:18px}
.legend span{display:inline-block;margin-right:14px}.swatch{display:inline-block;width:12px;height:12px;margin-right:5px;vertical-align:-1px}
.ok{color:#059669}.bad{color:#dc2626}small{color:#555}
</style></head><body>
<h1>${esc(title)}</h1>
<small>seed ${first.seed} · scale ${first.scale}× · ${fmtDuration(first.durationMs)} of arrivals \
from ${String(first.startHour).padStart(2, '0')}:00 UTC · virtual time</small>
<div class="legend" style="margin-top:8px">${reports.map(legendEntry).join('')}</div>
<h2>Overall</h2>
${summaryTable(reports)}
<h2>Plots</h2>
<div class="grid">
${cdfPlot(reports)}
${timelinePlot(reports, 'laneDepth', 'Messages waiting in session lanes')}
${timelinePlot(reports, 'inUse', 'Runs holding a global permit')}
${utilisationPlot(reports)}
</div>
${processesSection(reports)}
<h2>Per agent</h2>
${reports.map((r) => `<h3 style="font-size:14px">${esc(r.label)}</h3>${agentTable(r.report)}`).join('\n')}
<h2>Invariants</h2>
<ul>${reports
    .map((r) => {
      const v = r.report.invariants.violations;
      return `<li>${esc(r.label)}: ${r.report.invariants.checks.toLocaleString('en-US')} checks, ${
        v.length === 0
          ? '<span class="ok">no violations</span>'
          : `<span class="bad">${v.length} violations</span>: ${esc(
              v
                .slice(0, 3)
                .map((x) => `${x.invariant}: ${x.detail}`)
                .join('; '),
            )}`
      }</li>`;
    })
    .join('')}</ul>
<h2>What the model assumes</h2>
<ul>${ASSUMPTIONS.map((a) => `<li>${esc(a)}</li>`).join('')}</ul>
</body></html>
`;
}

function summaryTable(reports: LabelledReport[]): string {
  const rows: [string, (m: DeploymentMetrics, r: DeploymentReport) => string][] = [
    [
      'limits (global / per agent / lane / tools)',
      (_m, r) =>
        `${r.limits.max_runs_global} / ${r.limits.max_runs_per_agent} / ${r.limits.wait_lane_capacity} / ${r.limits.parallel_tool_concurrency}`,
    ],
    ['messages', (m) => String(m.messages)],
    ['completed / failed / cancelled', (m) => `${m.completed} / ${m.failed} / ${m.cancelled}`],
    [
      'rejected lane_full / session_busy / deadline_unmeetable',
      (m) => `${m.rejected.lane_full} / ${m.rejected.session_busy} / ${m.rejected.deadline_unmeetable}`,
    ],
    ['steered into running runs', (m) => String(m.steered)],
    ['collect messages merged / runs rolled back', (m) => `${m.collected} / ${m.rolledBack}`],
    [
      'messages per busy policy',
      (m) =>
        Object.entries(m.policies)
          .map(([policy, n]) => `${policy} ${n}`)
          .join(', '),
    ],
    ['lane wait p50 / p95 / p99', (m) => pct(m.laneWaitMs)],
    ['admission wait p50 / p95 / p99', (m) => pct(m.admissionWaitMs)],
    ['run latency p50 / p95 / p99', (m) => pct(m.runLatencyMs)],
    ['tool-claim waits (count, p95)', (m) => `${m.toolClaimWaitMs.count}, ${fmtMs(m.toolClaimWaitMs.p95)}`],
    [
      'limiter utilisation (mean, peak)',
      (_m, r) => `${(r.utilisation.global * 100).toFixed(1)} %, ${r.utilisation.peakGlobal}`,
    ],
    ['processes', (_m, r) => String(r.processes)],
    ['crashes', (_m, r) => String(r.crashes)],
  ];
  return `<table><tr><th></th>${reports.map((r) => `<th>${esc(r.label)}</th>`).join('')}</tr>${rows
    .map(
      ([name, cell]) =>
        `<tr><td>${esc(name)}</td>${reports.map((r) => `<td>${esc(cell(r.report.overall, r.report))}</td>`).join('')}</tr>`,
    )
    .join('')}</table>`;
}

function legendEntry(r: LabelledReport, i: number): string {
  return `<span><i class="swatch" style="background:${COLOURS[i % COLOURS.length]}"></i>${esc(r.label)}</span>`;
}

function agentTable(report: DeploymentReport): string {
  const head =
    '<tr><th>agent</th><th>messages</th><th>lane_full</th><th>session_busy</th><th>merged</th>' +
    '<th>rolled back</th><th>lane wait p95</th><th>admission wait p95</th><th>latency p50 / p95 / p99</th>' +
    '<th>utilisation</th></tr>';
  const rows = Object.entries(report.agents).map(
    ([agent, m]) =>
      `<tr><td>${esc(agent)}</td><td>${m.messages}</td><td>${m.rejected.lane_full}</td>` +
      `<td>${m.rejected.session_busy}</td><td>${m.collected}</td><td>${m.rolledBack}</td>` +
      `<td>${fmtMs(m.laneWaitMs.p95)}</td><td>${fmtMs(m.admissionWaitMs.p95)}</td><td>${pct(m.runLatencyMs)}</td>` +
      `<td>${((report.utilisation.perAgent[agent] ?? 0) * 100).toFixed(1)} %</td></tr>`,
  );
  return `<table>${head}${rows.join('')}</table>`;
}

/** With a cluster: per process of each report, a table and its share of the permits as bars. */
function processesSection(reports: LabelledReport[]): string {
  const clustered = reports.filter((r) => r.report.perProcess !== undefined);
  if (clustered.length === 0) return '';
  const head =
    '<tr><th>process</th><th>crashes</th><th>messages</th><th>runs</th><th>completed / failed / cancelled</th>' +
    '<th>sessions taken over</th><th>utilisation</th><th>peak running</th></tr>';
  const tables = clustered.map(({ label, report }) => {
    const rows = report.perProcess!.map(
      (p) =>
        `<tr><td>${esc(p.process)}</td><td>${p.crashes}</td><td>${p.messages}</td><td>${p.runs}</td>` +
        `<td>${p.completed} / ${p.failed} / ${p.cancelled}</td><td>${p.takenOver}</td>` +
        `<td>${(p.utilisation * 100).toFixed(1)} %</td><td>${p.peakRunning}</td></tr>`,
    );
    return `<h3 style="font-size:14px">${esc(label)}: ${report.processes} processes</h3><table>${head}${rows.join('')}</table>`;
  });
  const names = [...new Set(clustered.flatMap((r) => r.report.perProcess!.map((p) => p.process)))];
  const slot = (W - PAD.left - PAD.right) / Math.max(1, names.length);
  const bw = slot / (reports.length + 1);
  const maxU = Math.max(0.01, ...clustered.flatMap((r) => r.report.perProcess!.map((p) => p.utilisation)));
  const bars = names
    .map((name, n) => {
      const x = (PAD.left + slot * (n + 0.5)).toFixed(1);
      const label = `<text x="${x}" y="${H - PAD.bottom + 14}" text-anchor="middle">${esc(name)}</text>`;
      return (
        label +
        reports
          .map((r, i) => {
            const u = r.report.perProcess?.find((p) => p.process === name)?.utilisation ?? 0;
            const bx = PAD.left + slot * n + bw * (i + 0.5);
            const height = (y(0) - y(u / maxU)).toFixed(1);
            return (
              `<rect x="${bx.toFixed(1)}" y="${y(u / maxU).toFixed(1)}" width="${bw.toFixed(1)}" ` +
              `height="${height}" fill="${COLOURS[i % COLOURS.length]}"/>`
            );
          })
          .join('')
      );
    })
    .join('');
  const plot = frame(
    'Share of the permits per process (time-weighted running runs / max_runs_global)',
    bars,
    '',
    `${(maxU * 100).toFixed(1)} %`,
    'process',
    'utilisation',
  );
  return `<h2>Processes</h2>\n${tables.join('\n')}\n<div class="grid" style="margin-top:10px">${plot}</div>`;
}

function cdfPlot(reports: LabelledReport[]): string {
  const maxX = Math.max(1, ...reports.map((r) => r.report.overall.runLatencyQuantiles.at(-1) ?? 0));
  const lines = reports.map((r, i) => {
    const q = r.report.overall.runLatencyQuantiles;
    const points = q.map((v, k) => [x(v / maxX), y(k / Math.max(1, q.length - 1))] as const);
    return polyline(points, COLOURS[i % COLOURS.length]!);
  });
  return frame('Run latency CDF (completed runs)', lines.join(''), fmtMs(maxX), '100 %', 'latency', 'share of runs');
}

function timelinePlot(reports: LabelledReport[], key: 'laneDepth' | 'inUse', title: string): string {
  const maxY = Math.max(1, ...reports.flatMap((r) => r.report.timeline.map((p) => p[key])));
  const duration = reports[0]!.report.durationMs;
  const lines = reports.map((r, i) => {
    const points = r.report.timeline.flatMap((p, k, all) => {
      const end = all[k + 1]?.atMs ?? duration;
      return [[x(p.atMs / duration), y(p[key] / maxY)] as const, [x(end / duration), y(p[key] / maxY)] as const];
    });
    return polyline(points, COLOURS[i % COLOURS.length]!);
  });
  return frame(title, lines.join(''), fmtDuration(duration), String(maxY), 'virtual time', 'most at once');
}

function utilisationPlot(reports: LabelledReport[]): string {
  const bars = reports
    .map((r, i) => {
      const u = r.report.utilisation.global;
      const bw = (W - PAD.left - PAD.right) / (reports.length * 2);
      const bx = PAD.left + bw * (2 * i + 0.5);
      return (
        `<rect x="${bx.toFixed(1)}" y="${y(u).toFixed(1)}" width="${bw.toFixed(1)}" ` +
        `height="${(y(0) - y(u)).toFixed(1)}" fill="${COLOURS[i % COLOURS.length]}"/><text ` +
        `x="${(bx + bw / 2).toFixed(1)}" y="${(y(u) - 4).toFixed(1)}" text-anchor="middle" ` +
        `font-size="11">${(u * 100).toFixed(1)} %</text>`
      );
    })
    .join('');
  return frame('Limiter utilisation (time-weighted mean)', bars, '', '100 %', '', 'permits in use / max');
}

function frame(title: string, body: string, xMax: string, yMax: string, xLabel: string, yLabel: string): string {
  return `<figure style="margin:0"><figcaption style="font-weight:600;margin-bottom:4px">${esc(title)}</figcaption>
<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="system-ui,sans-serif" font-size="11">
<rect x="${PAD.left}" y="${PAD.top}" width="${W - PAD.left - PAD.right}" height="${H - PAD.top - PAD.bottom}" fill="#fafafa" stroke="#ccc"/>
${[0.25, 0.5, 0.75].map((f) => `<line x1="${PAD.left}" x2="${W - PAD.right}" y1="${y(f).toFixed(1)}" y2="${y(f).toFixed(1)}" stroke="#eee"/>`).join('')}
${body}
<text x="${PAD.left - 4}" y="${PAD.top + 8}" text-anchor="end">${esc(yMax)}</text><text x="${PAD.left - 4}" y="${y(0)}" text-anchor="end">0</text>
<text x="${W - PAD.right}" y="${H - PAD.bottom + 14}" text-anchor="end">${esc(xMax)}</text><text x="${PAD.left}" y="${H - PAD.bottom + 14}">0</text>
<text x="${(PAD.left + W - PAD.right) / 2}" y="${H - 6}" text-anchor="middle" fill="#555">${esc(xLabel)}</text>
<text transform="translate(12 ${(PAD.top + H - PAD.bottom) / 2}) rotate(-90)" text-anchor="middle" fill="#555">${esc(yLabel)}</text>
</svg></figure>`;
}

function polyline(points: readonly (readonly [number, number])[], colour: string): string {
  return `<polyline fill="none" stroke="${colour}" stroke-width="2" points="${points.map(([px, py]) => `${px.toFixed(1)},${py.toFixed(1)}`).join(' ')}"/>`;
}

const x = (f: number) => PAD.left + f * (W - PAD.left - PAD.right);
const y = (f: number) => H - PAD.bottom - f * (H - PAD.top - PAD.bottom);

function pct(p: Percentiles): string {
  return `${fmtMs(p.p50)} / ${fmtMs(p.p95)} / ${fmtMs(p.p99)}`;
}

export function fmtMs(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${(ms / 60_000).toFixed(1)} min`;
}

function fmtDuration(ms: number): string {
  return ms % 3_600_000 === 0 ? `${ms / 3_600_000} h` : ms % 60_000 === 0 ? `${ms / 60_000} min` : `${ms / 1000} s`;
}

function esc(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}
