/*
 * The inspector's views over the store, in a real browser (Debian's chromium driven by
 * playwright-core; never a downloaded one), against a real engine on the file store behind a
 * real gateway, after the busy scenario (busy-scenario.ts): a page opened while a run is held
 * in its tool batch shows the live actors at once; a fresh page lists the stored runs; the
 * tool run replays through its states; the sessions' swimlanes tell the steer, the queued
 * message and the burst of interrupts. Screenshots go to test-artifacts/ (git-ignored).
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine, type Engine } from '../../src/engine/index.js';
import { startGateway, type Gateway } from '../../src/gateway/index.js';
import { inspectorRoutes } from '../../src/gateway/inspector-page/index.js';
import { scriptedModel } from '../../src/model/scripted.js';
import { LowdbStore } from '../../src/store/index.js';
import { playBusyScenario, scenarioScript, scenarioTools, STEER_TEXT, type ScenarioRuns } from './busy-scenario.js';
import { CHROMIUM, hasChromium } from '../support/real-parts.js';
import { tempDirs } from '../support/temp-dirs.js';

/** How long the page may take to catch up: a browser on a loaded machine is slow, never wrong. */
const PATIENCE = { timeout: 20_000 };
const ARTIFACTS = join(process.cwd(), 'test-artifacts');
const haveChromium = hasChromium('the inspector history browser tests');

describe.skipIf(!haveChromium)('inspector history, replay and sessions (chromium)', () => {
  let engine: Engine;
  let gateway: Gateway;
  let context: BrowserContext;
  let dataDir: string;
  let profileDir: string;
  let runs: ScenarioRuns;
  const pageErrors: string[] = [];
  const external: string[] = [];
  /** The reads of the tool run wait for this, so a test can open a page while the run is mid-batch. */
  let releaseBatch: () => void = () => {};
  const batchHeld = new Promise<void>((resolve) => (releaseBatch = resolve));

  const url = (path: string) => `${gateway.httpUrl}${path}?token=${gateway.token}`;

  async function newPage(): Promise<Page> {
    const page = await context.newPage();
    page.on('pageerror', (error) => pageErrors.push(error.message));
    page.on('request', (request) => {
      if (!request.url().startsWith(gateway.httpUrl) && !request.url().startsWith(gateway.url))
        external.push(request.url());
    });
    return page;
  }

  const tempDir = tempDirs('switchyard-inspector-history-', 'afterAll');

  beforeAll(async () => {
    await mkdir(ARTIFACTS, { recursive: true });
    dataDir = await tempDir();
    profileDir = await tempDir();
    engine = await createEngine({
      store: await LowdbStore.open(join(dataDir, 'store')),
      models: { scripted: scriptedModel(scenarioScript) },
      tools: scenarioTools(() => batchHeld),
    });
    gateway = await startGateway({
      engine,
      host: '127.0.0.1',
      port: 0,
      dataDir,
      heartbeatMs: 0,
      httpRoutes: inspectorRoutes(),
    });
    context = await chromium.launchPersistentContext(profileDir, {
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--disable-quic',
        '--no-first-run',
      ],
      viewport: { width: 1600, height: 1000 },
    });
  });

  afterAll(async () => {
    releaseBatch();
    await context?.close();
    await gateway?.close();
    await engine?.close();
  });

  it('a page opened mid-run shows the running actors at once, while nothing moves; its runs list follows the engine', async () => {
    let page: Page | undefined;
    runs = await playBusyScenario(engine, async ({ toolRun }) => {
      // The run waits in its batch for the reads, which wait for releaseBatch: no transition can announce it.
      page = await newPage();
      await page.goto(url('/inspect'));
      const run = page.locator(`[data-testid="actor-item"][data-actor-id="run:${toolRun}"]`);
      await expect.poll(() => run.getAttribute('data-state'), PATIENCE).toBe('live.running.acting');
      const calls = page.locator('[data-testid="actor-item"][data-machine="toolCall"]');
      await expect.poll(() => calls.count(), PATIENCE).toBeGreaterThanOrEqual(3);
      await expect
        .poll(
          () => page!.locator('[data-testid="actor-item"][data-actor-id="session:alice"]').getAttribute('data-state'),
          PATIENCE,
        )
        .toBe('busy');
      expect(await page.locator('body').getAttribute('data-tab')).toBe('live');
      await page.screenshot({ path: join(ARTIFACTS, 'history-0-mid-run.png') });
      await page.click('[data-testid="tab-history"]');
      await expect
        .poll(
          () => page!.locator(`[data-testid="run-item"][data-run-id="${toolRun}"]`).getAttribute('data-state'),
          PATIENCE,
        )
        .toBe('running');
      releaseBatch();
    });
    // The same page, never reloaded, lists every run of the scenario as it ended.
    const items = page!.locator('[data-testid="run-item"]');
    await expect.poll(() => items.count(), PATIENCE).toBe(6);
    await expect
      .poll(
        () => page!.locator(`[data-testid="run-item"][data-run-id="${runs.toolRun}"]`).getAttribute('data-state'),
        PATIENCE,
      )
      .toBe('completed');
    await page!.close();
  }, 120_000);

  it('a fresh page lists the stored runs with their outcomes, and filters them', async () => {
    const page = await newPage();
    await page.goto(url('/inspect'));
    // Nothing runs: the page opens on what ran before.
    await expect.poll(() => page.locator('body').getAttribute('data-tab'), PATIENCE).toBe('history');
    const items = page.locator('[data-testid="run-item"]');
    await expect.poll(() => items.count(), PATIENCE).toBe(6);
    const listed = (await page.evaluate(
      `[...document.querySelectorAll('[data-testid="run-item"]')].map((a) => [a.dataset.runId, a.dataset.outcome])`,
    )) as [string, string][];
    expect(new Map(listed)).toEqual(
      new Map([
        [runs.toolRun, 'completed'],
        [runs.queued, 'completed'],
        [runs.slow, 'interrupted'],
        [runs.burst[0], 'superseded'],
        [runs.burst[1], 'superseded'],
        [runs.burst[2], 'completed'],
      ]),
    );
    // Newest first: the last message of the burst ended after the ones it superseded.
    const order = listed.map(([runId]) => runId);
    expect(order.indexOf(runs.burst[2])).toBeLessThan(order.indexOf(runs.burst[1]));
    expect(order.indexOf(runs.queued)).toBeLessThan(order.indexOf(runs.toolRun));
    expect(
      await page
        .locator(`[data-testid="run-item"][data-run-id="${runs.toolRun}"] [data-testid="run-details"]`)
        .textContent(),
    ).toMatch(/3 turns · 4 tool calls$/);
    expect(
      await page.locator('[data-testid="session-link"]').evaluateAll((links) => links.map((a) => a.textContent)),
    ).toEqual(expect.arrayContaining(['alice', 'bob']));
    await page.screenshot({ path: join(ARTIFACTS, 'history-1-runs.png') });

    await page.fill('[data-testid="filter-outcome"]', 'superseded');
    await expect.poll(() => items.count(), PATIENCE).toBe(2);
    expect(
      await items.evaluateAll((links) =>
        links.map((a) => (a as unknown as { dataset: { runId: string } }).dataset.runId).sort(),
      ),
    ).toEqual([runs.burst[0], runs.burst[1]].sort());
    await page.fill('[data-testid="filter-outcome"]', '');
    await page.fill('[data-testid="filter-session"]', 'alice');
    await expect.poll(() => items.count(), PATIENCE).toBe(2);
    await page.selectOption('[data-testid="filter-state"]', 'failed');
    await expect.poll(() => items.count(), PATIENCE).toBe(0);
    await page.close();
  }, 60_000);

  it('replays the tool run: the statechart goes thinking, acting, boundary, completed as the scrubber moves', async () => {
    const page = await newPage();
    await page.goto(url('/inspect'));
    const item = page.locator(`[data-testid="run-item"][data-run-id="${runs.toolRun}"]`);
    await item.click(PATIENCE);
    await expect.poll(() => page.locator('body').getAttribute('data-view'), PATIENCE).toBe('run');
    expect(new URL(page.url()).pathname).toBe(`/inspect/run/${runs.toolRun}`);
    const scrubber = page.locator('[data-testid="replay-scrubber"]');
    const events = await engine.history(runs.toolRun);
    await expect.poll(() => scrubber.getAttribute('max'), PATIENCE).toBe(String(events.length));
    const chart = page.locator('[data-testid="statechart"]');
    // A finished run opens at its end.
    await expect.poll(() => chart.getAttribute('data-current'), PATIENCE).toBe('run.completed');

    await page.locator('body').press('Home');
    const at = page.locator('[data-testid="replay-at"]');
    await expect.poll(() => at.getAttribute('data-index'), PATIENCE).toBe('0');
    const states: string[] = [(await chart.getAttribute('data-current'))!];
    for (let index = 1; index <= events.length; index++) {
      await page.locator('body').press('ArrowRight');
      await expect.poll(() => at.getAttribute('data-index'), PATIENCE).toBe(String(index));
      await expect
        .poll(() => page.locator('[data-testid="event-row"].current').getAttribute('data-seq'), PATIENCE)
        .toBe(String(events[index - 1]!.seq));
      const state = (await chart.getAttribute('data-current'))!;
      if (states.at(-1) !== state) states.push(state);
      if (index === events.findIndex((e) => e.type === 'tool.started' && e.callId === 'read-3') + 1) {
        // The reads have started and none has finished: three bars running, the publish not yet begun.
        await expect
          .poll(() => page.locator('[data-testid="timeline-bar"][data-outcome="running"]').count(), PATIENCE)
          .toBe(3);
        expect(await page.locator('[data-testid="timeline-bar"][data-call-id="publish-1"]').count()).toBe(0);
        expect(await page.locator('[data-testid="event-row"].future').count()).toBe(events.length - index);
        await page.screenshot({ path: join(ARTIFACTS, 'history-2-replay-acting.png') });
      }
    }
    expect(states).toEqual([
      'run.live.queued',
      'run.live.running.thinking',
      'run.live.running.acting',
      'run.live.running.boundary',
      'run.live.running.thinking',
      'run.live.running.boundary',
      // The steer came while the model answered: one more turn reads it.
      'run.live.running.thinking',
      'run.live.running.boundary',
      'run.completed',
    ]);
    await expect.poll(() => page.locator('[data-testid="timeline-bar"][data-outcome="ok"]').count(), PATIENCE).toBe(4);

    // Clicking an event moves the scrubber there.
    const scheduled = events.find((e) => e.type === 'tool.scheduled')!;
    await page.locator(`[data-testid="event-row"][data-seq="${scheduled.seq}"]`).click();
    await expect.poll(() => chart.getAttribute('data-current'), PATIENCE).toBe('run.live.running.acting');
    await page.close();

    // The link opens the replay directly.
    const direct = await newPage();
    await direct.goto(url(`/inspect/run/${runs.toolRun}`));
    await expect
      .poll(() => direct.locator('[data-testid="statechart"]').getAttribute('data-current'), PATIENCE)
      .toBe('run.completed');
    await expect
      .poll(() => direct.locator('[data-testid="replay-session"]').textContent(), PATIENCE)
      .toBe('session alice');
    await direct.close();
  }, 120_000);

  it('the swimlanes show the steer into its run and turn, the queued message, and the burst of interrupts', async () => {
    const page = await newPage();
    await page.goto(url('/inspect/session/alice'));
    const lanes = page.locator('[data-testid="lane-run"]');
    await expect.poll(() => lanes.count(), PATIENCE).toBe(2);
    const steer = page.locator('[data-testid="lane-steer"]');
    await expect.poll(() => steer.count(), PATIENCE).toBe(1);
    expect(await steer.getAttribute('data-into')).toBe(runs.toolRun);
    expect(await steer.getAttribute('data-steer-id')).toBe(runs.steer);
    // Turns count from 0: the third turn read it (the one after the answer it came during).
    expect(await steer.getAttribute('data-turn')).toBe('2');
    expect(await steer.locator('title').textContent()).toContain(STEER_TEXT);
    const queued = page.locator(`[data-testid="lane-run"][data-run-id="${runs.queued}"]`);
    expect(await queued.getAttribute('data-state')).toBe('completed');
    expect(await queued.locator('[data-testid="lane-wait"]').count()).toBe(1);
    await page.screenshot({ path: join(ARTIFACTS, 'history-3-session-alice.png') });

    await page.locator('[data-testid="session-link"][data-session="bob"]').click();
    await expect.poll(() => new URL(page.url()).pathname, PATIENCE).toBe('/inspect/session/bob');
    await expect.poll(() => lanes.count(), PATIENCE).toBe(4);
    const [first, second, last] = runs.burst;
    const lane = (runId: string) => page.locator(`[data-testid="lane-run"][data-run-id="${runId}"]`);
    expect([
      await lane(runs.slow).getAttribute('data-outcome'),
      await lane(runs.slow).getAttribute('data-cancelled-by'),
    ]).toEqual(['interrupted', first]);
    expect([
      await lane(first).getAttribute('data-outcome'),
      await lane(first).getAttribute('data-cancelled-by'),
    ]).toEqual(['superseded', second]);
    expect([
      await lane(second).getAttribute('data-outcome'),
      await lane(second).getAttribute('data-cancelled-by'),
    ]).toEqual(['superseded', last]);
    expect(await lane(last).getAttribute('data-state')).toBe('completed');
    const arrows = (await page.evaluate(
      `[...document.querySelectorAll('[data-testid="lane-link"]')].map((g) => [g.dataset.kind, g.dataset.by, g.dataset.run])`,
    )) as string[][];
    expect(arrows).toEqual([
      ['interrupt', first, runs.slow],
      ['supersede', second, first],
      ['supersede', last, second],
    ]);
    await page.screenshot({ path: join(ARTIFACTS, 'history-4-session-bob.png') });
    await page.close();
  }, 60_000);

  it('pages back through older runs', async () => {
    const more = await Promise.all(
      Array.from({ length: 40 }, (_, i) => engine.submit({ sessionId: `carol-${i}`, input: `question ${i}` })),
    );
    await Promise.all(more.map(({ runId }) => engine.wait(runId)));
    const page = await newPage();
    await page.goto(url('/inspect'));
    const items = page.locator('[data-testid="run-item"]');
    await expect.poll(() => items.count(), PATIENCE).toBe(40);
    expect(await page.locator('[data-testid="history-meta"]').textContent()).toBe('40+ runs');
    await page.click('[data-testid="runs-more"]');
    await expect.poll(() => items.count(), PATIENCE).toBe(46);
    expect(await page.locator('[data-testid="runs-more"]').isHidden()).toBe(true);
    const ids = (await page.evaluate(
      `[...document.querySelectorAll('[data-testid="run-item"]')].map((a) => a.dataset.runId)`,
    )) as string[];
    // The newer page holds the 40 runs just made, the older one the scenario's.
    expect(ids.slice(0, 40).sort()).toEqual(more.map((r) => r.runId).sort());
    expect(ids.slice(40).sort()).toEqual([runs.toolRun, runs.queued, runs.slow, ...runs.burst].sort());
    await page.close();
    expect(pageErrors).toEqual([]);
    expect(external).toEqual([]);
  }, 60_000);
});
