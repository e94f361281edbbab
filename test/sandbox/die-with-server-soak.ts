/*
 * The long version of test/sandbox/die-with-server.test.ts:
 *   npm run trials:die-with-server -- [--trials 200] [--backend bwrap|none] [--parallel 4]
 * Prints the figures and exits 1 if a marker was written after a kill or a process was left.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { bundleFixture, runTrials } from './die-with-server-trials.js';

const { values } = parseArgs({
  options: {
    trials: { type: 'string', default: '200' },
    backend: { type: 'string', default: 'bwrap' },
    parallel: { type: 'string', default: '4' },
  },
});
const dir = await mkdtemp(join(tmpdir(), 'switchyard-die-soak-'));
try {
  const figures = await runTrials({
    fixture: await bundleFixture(dir),
    backend: values.backend === 'none' ? 'none' : 'bwrap',
    trials: Number(values.trials),
    parallel: Number(values.parallel),
  });
  console.log(JSON.stringify({ ...figures, offsetsMs: [figures.offsetsMs[0], figures.offsetsMs.at(-1)] }));
  process.exitCode = figures.markersWritten === 0 && figures.processesLeft === 0 ? 0 : 1;
} finally {
  await rm(dir, { recursive: true, force: true });
}
