/*
 * The inspector's tool timeline shows a wait for another run's claim (docs/claims.md, "Claims
 * across runs"), in a real browser against a real engine behind a real gateway: run A edits
 * app.ts for a while, run B of another session in the same workspace wants to edit it too, so
 * B's call waits (`tool.waiting`) — drawn as a wait bar naming A and the file, before B's own
 * bar. Screenshot to test-artifacts/ (git-ignored).
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
import { scriptedModel } from '../../src/model/scripted.js';
import { defineTool } from '../../src/tools/tool.js';
import { CHROMIUM, hasChromium } from '../support/real-parts.js';
import { tempDirs } from '../support/temp-dirs.js';

const PATIENCE = { timeout: 20_000 };
const ARTIFACTS = join(process.cwd(), 'test-artifacts');
const haveChromium = hasChromium('the inspector claim-wait browser test');

/** Edits a file of the workspace for `ms` of real time. */
const edit = defineTool({
  name: 'edit_app',
  description: 'Edits app.ts (takes a while).',
  input: z.object({ ms: z.number() }),
  concurrencyClaim: (_input, ctx) => Claims.paths([join(ctx.workspace, 'app.ts')]),
  async execute({ ms }, ctx) {
    await sleep(systemClock, ms, ctx.signal);
    return 'edited';
  },
});

describe.skipIf(!haveChromium)("inspector: a wait for another run's claim (chromium)", () => {
  let engine: Engine;
  let gateway: Gateway;
  let context: BrowserContext;
  let page: Page;
  let dataDir: string;
  let profileDir: string;
  let workspace: string;

  const tempDir = tempDirs('switchyard-inspector-wait-', 'afterAll');

  beforeAll(async () => {
    await mkdir(ARTIFACTS, { recursive: true });
    dataDir = await tempDir();
    profileDir = await tempDir();
    workspace = await tempDir();
    engine = await createEngine({
      models: {
        scripted: scriptedModel((ctx) =>
          ctx.turn === 0
            ? {
                toolCalls: [
                  { id: `edit-${ctx.input}`, name: 'edit_app', args: { ms: ctx.input === 'A' ? 2_500 : 300 } },
                ],
              }
            : { text: 'done' },
        ),
      },
      tools: [edit],
      config: { sandbox: { workspace_root: join(dataDir, 'workspaces') } },
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
      viewport: { width: 1400, height: 900 },
    });
    page = await context.newPage();
  });

  afterAll(async () => {
    await context?.close();
    await gateway?.close();
    await engine?.close();
  });

  it("draws the wait before the call's own bar, naming the run and the file it waited for", async () => {
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));
    await page.goto(`${gateway.httpUrl}/inspect?token=${gateway.token}`);
    await page.waitForSelector('[data-testid="conn-status"][data-state="live"]');

    const a = await engine.submit({ sessionId: 'alice', input: 'A', workspace });
    await expect
      .poll(async () => (await engine.history(a.runId)).some((e) => e.type === 'tool.started'), PATIENCE)
      .toBe(true);
    const b = await engine.submit({ sessionId: 'bob', input: 'B', workspace });

    // B is the latest run: its timeline shows the wait while A still edits.
    const wait = page.locator('[data-testid="timeline-wait"]');
    await expect.poll(() => wait.count(), PATIENCE).toBe(1);
    expect(await wait.getAttribute('data-blocked-by')).toBe(a.runId);
    expect(await wait.getAttribute('data-resource')).toBe(`path ${join(workspace, 'app.ts')}`);
    expect(await wait.getAttribute('title')).toMatch(/edit_app \(edit-B\) waited .* for edit_app \(edit-A\) of run/);
    await expect
      .poll(
        () => page.locator('[data-testid="event-log"] [data-testid="event-row"][data-type="tool.waiting"]').count(),
        PATIENCE,
      )
      .toBe(1);
    await page.screenshot({ path: join(ARTIFACTS, 'inspector-claim-wait-0-waiting.png') });

    await engine.wait(b.runId);
    const bar = page.locator('[data-testid="timeline-bar"][data-outcome="ok"]');
    await expect.poll(() => bar.count(), PATIENCE).toBe(1);
    // The timeline updates its bars in place: the wait and the bar are the same elements from
    // one frame to the next, so their boxes are read once.
    const [waitBox, barBox] = [await wait.boundingBox(), await bar.boundingBox()];
    expect(waitBox && barBox && waitBox.x + waitBox.width <= barBox.x + 1).toBe(true);
    await page.screenshot({ path: join(ARTIFACTS, 'inspector-claim-wait-1-done.png') });
    expect(pageErrors).toEqual([]);
  }, 60_000);
});
