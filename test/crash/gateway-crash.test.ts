/*
 * Acknowledged means durable, tried from outside: a real `switchyard serve` under load is
 * killed with SIGKILL at each kind of bad moment and restarted on the same data directory;
 * every message it acknowledged is accounted for, every log is whole, no session number is
 * used twice and every steer answers truthfully. `npm run soak` runs many more kills.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { GatewayCrashHarness, KILL_MOMENTS } from './gateway-crash-harness.js';

const harness = new GatewayCrashHarness();
beforeAll(() => harness.setUp());
afterAll(() => harness.tearDown());

it('after SIGKILL at every bad moment, every acknowledged message is accounted for', async () => {
  for (const moment of KILL_MOMENTS) {
    expect(await harness.trial(moment), `after a kill ${moment}`).toEqual([]);
  }
  const report = await harness.finish();
  console.log(
    `crash trials: ${report.trials.map((t) => `${t.moment} ${t.acknowledged} acked/${t.refused} refused`).join('; ')}; ` +
      `${report.acknowledged} acknowledged in all`,
  );
  expect(report.violations).toEqual([]);
  expect(report.acknowledged).toBeGreaterThan(100);
  expect(report.trials.find((t) => t.moment === 'at-saturation')!.refused).toBeGreaterThan(0);
}, 300_000);
