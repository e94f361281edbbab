/*
 * The inspector page in a real browser (Debian's chromium driven by playwright-core; never a
 * downloaded one), against a real engine behind a real gateway: a run whose first turn reads
 * three things in parallel and then makes one global call. The page must draw the run's
 * statechart and follow its states live, and draw the batch as a read group of overlapping
 * bars followed by the global call, with the conflict on the boundary. Screenshots go to
 * test-artifacts/ (git-ignored).
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Claims } from '../../src/concurrency/index.js';
import { sleep, systemClock } from '../../src/core/clock.js';
import { createEngine, type Engine } from '../../src/engine/index.js';
import { startGateway, type Gateway } from '../../src/gateway/index.js';
import { inspectorRoutes } from '../../src/gateway/inspector-page/index.js';
import { scriptedModel, type ScriptContext, type ScriptTurn } from '../../src/model/scripted.js';
import { defineTool } from '../../src/tools/tool.js';
import { CHROMIUM, hasChromium } from '../support/real-parts.js';
import { tempDirs } from '../support/temp-dirs.js';

/** How long the page may take to catch up with the engine: a browser on a loaded machine is slow, never wrong. */
const PATIENCE = { timeout: 20_000 };
const ARTIFACTS = join(process.cwd(), 'test-artifacts');
const haveChromium = hasChromium('the inspector browser tests');

const readTool = (name: string) =>
  defineTool({
    name,
    description: `Reads ${name.slice(5)} (takes a moment).`,
    input: z.object({ path: z.string() }),
    readOnly: true,
    concurrencyClaim: ({ path }) => Claims.shared([path]),
    async execute({ path }, ctx) {
      await sleep(systemClock, 300, ctx.signal);
      return { path, text: `contents of ${path}` };
    },
  });

const publish = defineTool({
  name: 'publish',
  description: 'Publishes the summary somewhere unknown: a global claim.',
  input: z.object({ text: z.string() }),
  async execute({ text }, ctx) {
    await sleep(systemClock, 200, ctx.signal);
    return { published: text.length };
  },
});

/** Turn 1 (thinks 600 ms): three reads and a publish in one batch; turn 2 (400 ms): the answer. */
function script(ctx: ScriptContext): ScriptTurn {
  // A model that thinks for a minute, unless the run is cancelled first.
  if (ctx.input === 'think slowly') return { delayMs: 60_000, text: 'too late' };
  if (ctx.turn === 0) {
    return {
      delayMs: 600,
      toolCalls: [
        { id: 'read-1', name: 'read_notes', args: { path: 'notes.md' } },
        { id: 'read-2', name: 'read_plan', args: { path: 'plan.md' } },
        { id: 'read-3', name: 'read_todo', args: { path: 'todo.md' } },
        { id: 'publish-1', name: 'publish', args: { text: 'summary' } },
      ],
    };
  }
  return { delayMs: 400, text: 'Read three files and published the summary.' };
}

interface BarBox {
  callId: string;
  group: string;
  start: number;
  end: number;
  left: number;
  right: number;
}

describe.skipIf(!haveChromium)('inspector page (chromium)', () => {
  let engine: Engine;
  let gateway: Gateway;
  let context: BrowserContext;
  let page: Page;
  let dataDir: string;
  let profileDir: string;

  const tempDir = tempDirs('switchyard-inspector-', 'afterAll');

  beforeAll(async () => {
    await mkdir(ARTIFACTS, { recursive: true });
    dataDir = await tempDir();
    profileDir = await tempDir();
    engine = await createEngine({
      models: { scripted: scriptedModel(script) },
      tools: [readTool('read_notes'), readTool('read_plan'), readTool('read_todo'), publish],
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
    page = await context.newPage();
  });

  afterAll(async () => {
    await context?.close();
    await gateway?.close();
    await engine?.close();
  });

  it('answers 401 to a page request without the token, and to a wrong one', async () => {
    expect((await fetch(`${gateway.httpUrl}/inspect`)).status).toBe(401);
    expect((await fetch(`${gateway.httpUrl}/inspect?token=not-the-token`)).status).toBe(401);
    expect((await fetch(`${gateway.httpUrl}/inspect/app.js`)).status).toBe(401);
    expect((await fetch(`${gateway.httpUrl}/inspect/views/replay-bar.js`)).status).toBe(401);
    expect((await fetch(`${gateway.httpUrl}/inspect/run/some-run`)).status).toBe(401);
    expect((await fetch(`${gateway.httpUrl}/inspect/session/alice?token=not-the-token`)).status).toBe(401);
    expect((await fetch(`${gateway.httpUrl}/inspect/run/some-run?token=${gateway.token}`)).status).toBe(200);
    const ok = await fetch(`${gateway.httpUrl}/inspect?token=${gateway.token}`);
    expect(ok.status).toBe(200);
    expect(await ok.text()).not.toMatch(/https?:\/\/(?!www\.w3\.org)/);
  });

  it('never puts the token into its HTML, and strips it from the address bar (issue 24)', async () => {
    const served = await fetch(`${gateway.httpUrl}/inspect/run/some-run?token=${gateway.token}`);
    expect(await served.text()).not.toContain(gateway.token);
    expect(served.headers.get('set-cookie')).toMatch(/; Path=\/inspect; HttpOnly; SameSite=Strict$/);
    await page.goto(`${gateway.httpUrl}/inspect?token=${gateway.token}`);
    await page.locator('[data-testid="conn-status"][data-state="live"]').waitFor({ timeout: 30_000 });
    expect(page.url()).not.toContain(gateway.token);
    expect(await page.content()).not.toContain(gateway.token);
    // A reload has no token in its address: the page's cookie and the tab's copy carry it.
    await page.reload();
    await page.locator('[data-testid="conn-status"][data-state="live"]').waitFor({ timeout: 30_000 });
  });

  it('draws the run statechart live and the tool batch as groups on a timeline', async () => {
    const external: string[] = [];
    page.on('request', (request) => {
      if (!request.url().startsWith(gateway.httpUrl) && !request.url().startsWith(gateway.url))
        external.push(request.url());
    });
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));

    await page.goto(`${gateway.httpUrl}/inspect?token=${gateway.token}`);
    await page.waitForSelector('[data-testid="conn-status"][data-state="live"]');
    await page.waitForSelector('body[data-statecharts="loaded"]', { timeout: 15_000 });
    await page.screenshot({ path: join(ARTIFACTS, 'inspector-0-idle.png') });

    // Record every state the chart highlights, as the page changes it (the test has no DOM types: a string script).
    await page.evaluate(`(() => {
      const chart = document.querySelector('[data-testid="statechart"]');
      const seen = (window.__seen = []);
      new MutationObserver(() => {
        const current = chart.dataset.current;
        if (current && seen[seen.length - 1] !== current) seen.push(current);
      }).observe(chart, { attributes: true, attributeFilter: ['data-current'] });
    })()`);
    const { runId } = await engine.submit({ sessionId: 'alice', input: 'summarize my notes' });
    const chart = page.locator('[data-testid="statechart"]');
    // The page updates its elements in place rather than drawing them anew each frame: the run's
    // row in the actor tree and its first event row, marked now, are the same elements at the end.
    const runItem = `document.querySelector('[data-testid="actor-item"][data-actor-id="run:${runId}"]')`;
    const firstEvent = `document.querySelector('[data-testid="event-row"][data-seq="1"]')`;
    await expect.poll(() => page.evaluate(`Boolean(${runItem} && ${firstEvent})`), PATIENCE).toBe(true);
    await page.evaluate(`${runItem}.__kept = ${firstEvent}.__kept = true`);

    let seen: string[] = [];
    const shots = new Set<string>();
    const deadline = Date.now() + PATIENCE.timeout;
    while (Date.now() < deadline) {
      seen = (await page.evaluate('window.__seen')) as string[];
      const leaf = seen.at(-1)?.split('.').pop() ?? '';
      if ((leaf === 'thinking' || leaf === 'acting') && !shots.has(leaf)) {
        shots.add(leaf);
        await page.screenshot({ path: join(ARTIFACTS, `inspector-1-${leaf}.png`) });
      }
      if (seen.at(-1) === 'run.completed') break;
      await sleep(systemClock, 25);
    }
    expect(await chart.getAttribute('data-actor-id')).toBe(`run:${runId}`);
    // The run machine is drawn: its states are there, nested as in the definition.
    for (const id of [
      'run.live',
      'run.live.queued',
      'run.live.running',
      'run.live.running.thinking',
      'run.live.running.acting',
      'run.completed',
    ]) {
      expect(await chart.locator(`svg [data-state-id="${id}"]`).count()).toBe(1);
    }
    const boxOf = async (id: string) => (await chart.locator(`svg [data-state-id="${id}"] > .sc-box`).boundingBox())!;
    const inside = (inner: { x: number; y: number; width: number; height: number }, outer: typeof inner) =>
      inner.x >= outer.x &&
      inner.y >= outer.y &&
      inner.x + inner.width <= outer.x + outer.width &&
      inner.y + inner.height <= outer.y + outer.height;
    expect(inside(await boxOf('run.live.running.thinking'), await boxOf('run.live.running'))).toBe(true);
    expect(inside(await boxOf('run.live.running'), await boxOf('run.live'))).toBe(true);
    expect(inside(await boxOf('run.completed'), await boxOf('run.live'))).toBe(false);
    expect(seen).toContain('run.live.running.thinking');
    expect(seen).toContain('run.live.running.acting');
    expect(seen.indexOf('run.live.running.acting')).toBeGreaterThan(seen.indexOf('run.live.running.thinking'));
    expect(seen.at(-1)).toBe('run.completed');
    await expect
      .poll(() => chart.locator('svg .sc-current').getAttribute('data-state-id'), PATIENCE)
      .toBe('run.completed');

    // The batch: group 1 holds the three reads, running side by side; group 2 the global call, after them.
    const bars = page.locator('[data-testid="timeline-bar"]');
    await expect.poll(() => bars.count(), PATIENCE).toBe(4);
    await expect.poll(() => page.locator('[data-testid="timeline-bar"][data-outcome="ok"]').count(), PATIENCE).toBe(4);
    // One script, so every bar is measured in the same frame (the test's tsconfig has no DOM types).
    const boxes = (await page.evaluate(`[...document.querySelectorAll('[data-testid="timeline-bar"]')].map((el) => {
      const rect = el.getBoundingClientRect();
      return {
        callId: el.dataset.callId, group: el.dataset.group, start: Number(el.dataset.start), end: Number(el.dataset.end),
        left: rect.left, right: rect.right,
      };
    })`)) as BarBox[];
    const reads = boxes.filter((b) => b.group === '0');
    const globals = boxes.filter((b) => b.group === '1');
    expect(globals).toHaveLength(1);
    const global = globals[0]!;
    expect(reads.map((b) => b.callId)).toEqual(['read-1', 'read-2', 'read-3']);
    expect(global.callId).toBe('publish-1');
    // Time ranges of the reads overlap: each starts before any of them ends.
    expect(Math.max(...reads.map((b) => b.start))).toBeLessThan(Math.min(...reads.map((b) => b.end)));
    expect(Math.max(...reads.map((b) => b.left))).toBeLessThan(Math.min(...reads.map((b) => b.right)));
    // The global call starts once every read has ended, on the clock and on the screen.
    expect(global.start).toBeGreaterThanOrEqual(Math.max(...reads.map((b) => b.end)));
    expect(global.left).toBeGreaterThanOrEqual(Math.max(...reads.map((b) => b.right)) - 1);

    const boundary = page.locator('[data-testid="timeline-boundary"]');
    await expect.poll(() => boundary.count(), PATIENCE).toBe(1);
    expect(await boundary.getAttribute('data-reason')).toBe('global');
    expect(await boundary.getAttribute('title')).toMatch(/publish-1 conflicts with read-\d — global/);

    // The event log and the gauges follow along.
    const log = page.locator('[data-testid="event-log"] [data-testid="event-row"]');
    await expect.poll(() => log.last().getAttribute('data-type'), PATIENCE).toBe('run.completed');
    await expect
      .poll(() => page.locator('[data-testid="gauge-global"]').getAttribute('data-in-use'), PATIENCE)
      .toBe('0');

    expect(await page.evaluate(`[${runItem}.__kept, ${firstEvent}.__kept]`)).toEqual([true, true]);

    await boundary.hover();
    await page.screenshot({ path: join(ARTIFACTS, 'inspector-2-completed.png') });
    expect(pageErrors).toEqual([]);
    expect(external).toEqual([]);
  }, 120_000);

  it('shows a running model turn under its run in the actor tree, and drops it once the turn ends', async () => {
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));
    await page.goto(`${gateway.httpUrl}/inspect?token=${gateway.token}`);
    await page.waitForSelector('[data-testid="conn-status"][data-state="live"]');
    const { runId } = await engine.submit({ sessionId: 'bob', input: 'think slowly' });
    const run = `run:${runId}`;
    const turn = `${run}/turn:0`;
    const rows = () =>
      page.evaluate(
        `[...document.querySelectorAll('[data-testid="actor-item"]')].map((el) =>
          [el.dataset.actorId, el.style.getPropertyValue('--depth'), el.textContent.replace(/\\s+/g, ' ').trim()])`,
      ) as Promise<[string, string, string][]>;
    await expect.poll(async () => (await rows()).some(([id]) => id === turn), PATIENCE).toBe(true);
    const shown = await rows();
    const runAt = shown.findIndex(([id]) => id === run);
    // Right under its run, one level deeper, named for what it is.
    expect(shown[runAt + 1]![0]).toBe(turn);
    expect(Number(shown[runAt + 1]![1])).toBe(Number(shown[runAt]![1]) + 1);
    expect(shown[runAt + 1]![2]).toContain('model turn');
    await page.screenshot({ path: join(ARTIFACTS, 'inspector-3-model-turn.png') });

    await engine.cancel(runId);
    await expect.poll(async () => (await rows()).some(([id]) => id === turn), PATIENCE).toBe(false);
    expect(pageErrors).toEqual([]);
  }, 60_000);
});
