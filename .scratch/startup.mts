import { runCommand } from '/work/wt-sandbox/src/sandbox/run-command.js';
import { mkdirSync, chmodSync } from 'node:fs';
const ws = '/tmp/sbx-proto/ws3'; mkdirSync(ws, { recursive: true }); chmodSync('/tmp/sbx-proto', 0o755);
const run = (backend: 'bwrap' | 'none') => runCommand({ command: 'true', cwd: ws, workspace: ws, timeoutMs: 10000, maxOutputBytes: 1 << 20, network: false, backend });
for (const backend of ['bwrap', 'none'] as const) {
  await run(backend);
  const times: number[] = [];
  for (let i = 0; i < 20; i++) { const t = performance.now(); await run(backend); times.push(performance.now() - t); }
  times.sort((a, b) => a - b);
  console.log(backend, 'median ms', times[10].toFixed(1), 'min', times[0].toFixed(1));
}
