/*
 * `npm run soak`: the gateway crash harness at length — `--rounds N` rounds of a SIGKILL at
 * every bad moment (default 11: 55 kills), each followed by a restart and the full check.
 * Prints the figures and exits non-zero on the first broken promise.
 */
import { parseArgs } from 'node:util';
import { GatewayCrashHarness, KILL_MOMENTS } from './gateway-crash-harness.js';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '11' } } });
const rounds = Number(values.rounds);
const harness = new GatewayCrashHarness();
await harness.setUp();
let failed = false;
try {
  for (let round = 1; round <= rounds && !failed; round++) {
    for (const moment of KILL_MOMENTS) {
      const violations = await harness.trial(moment);
      if (violations.length > 0) {
        console.error(`round ${round}, kill ${moment}:\n  ${violations.join('\n  ')}`);
        failed = true;
        break;
      }
    }
    console.log(`round ${round}/${rounds}: every acknowledged message accounted for`);
  }
  const report = await harness.finish();
  const kills = report.trials.length;
  const refused = report.trials.reduce((n, t) => n + t.refused, 0);
  console.log(
    `${kills} kills, ${report.acknowledged} acknowledged messages (${refused} refused as lane_full), ${report.violations.length} violations`,
  );
  for (const violation of report.violations) console.error(`  ${violation}`);
  if (report.violations.length > 0) failed = true;
} finally {
  await harness.tearDown();
}
process.exit(failed ? 1 : 0);
