/*
 * A command never outlives the server that started it (issue 27.2; docs/sandbox.md, "A command
 * dies with its server"), proven from outside: stand-in servers (real Node processes running
 * runCommand) are SIGKILLed at many moments around the start of their command — before the
 * spawn, while bwrap sets up, as the command starts, once it runs — and no marker the command
 * would write after its delay may appear, and no process of it may be left (/proc scanned for
 * the trial's token in every process's environment). Without the parent guard the unsandboxed
 * trials write their markers and a bwrap trial now and then does too (the figures are in the
 * report of issue 27); `npm run trials:die-with-server` runs many more trials.
 */
import { describe, expect, it } from 'vitest';
import { hasBwrap, hasSetpriv } from '../support/real-parts.js';
import { tempDirs } from '../support/temp-dirs.js';
import { bundleFixture, runTrials } from './die-with-server-trials.js';

const setpriv = hasSetpriv('the die-with-server trials');
const bwrap = setpriv && (await hasBwrap('the die-with-server trials'));
const tempDir = tempDirs('switchyard-die-fixture-', 'afterAll');

describe.skipIf(!setpriv)('a command dies with its server, however early the server dies', () => {
  it.skipIf(!bwrap)(
    'bwrap: 40 kills around the command start leave no write and no process',
    async () => {
      const figures = await runTrials({
        fixture: await bundleFixture(await tempDir()),
        backend: 'bwrap',
        trials: 40,
        parallel: 6,
      });
      console.log('die-with-server trials', JSON.stringify({ ...figures, offsetsMs: undefined }));
      expect(figures.controlMarkers).toBe(2);
      expect(figures.killed).toBe(40);
      expect(figures.killed - figures.writtenBeforeKill).toBeGreaterThanOrEqual(36);
      expect(figures.markersWritten).toBe(0);
      expect(figures.processesLeft).toBe(0);
    },
    120_000,
  );

  it('unsandboxed: 16 kills around the command start leave no write of its shell and no process', async () => {
    const figures = await runTrials({
      fixture: await bundleFixture(await tempDir()),
      backend: 'none',
      trials: 16,
      parallel: 6,
    });
    console.log('die-with-server trials', JSON.stringify({ ...figures, offsetsMs: undefined }));
    expect(figures.controlMarkers).toBe(1);
    expect(figures.killed).toBe(16);
    expect(figures.killed - figures.writtenBeforeKill).toBeGreaterThanOrEqual(14);
    expect(figures.markersWritten).toBe(0);
    expect(figures.processesLeft).toBe(0);
  }, 120_000);
});
