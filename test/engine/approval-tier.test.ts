/*
 * RunRequest.approvalTier: one run works under its own tier in place of [approval] tier, the
 * runs beside it keep the configured one, and the floors still hold.
 */
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sandboxWorkspace } from '../sandbox/sandbox-workspace.js';
import { scriptedModel } from '../../src/model/index.js';
import { engineFixture, recordEvents } from './fixtures.js';
import { until } from '../support/eventually.js';

const newEngine = engineFixture();
let workspace: string;

beforeAll(async () => {
  workspace = await sandboxWorkspace('switchyard-tier-');
});
afterAll(async () => {
  await rm(workspace, { recursive: true, force: true });
});

// mkdir is neither read-only, idempotent nor destructive: plan denies it, ask asks, auto allows it.
const mkdirOnce = scriptedModel([
  { toolCalls: [{ name: 'file_ops', args: { operation: 'mkdir', path: 'notes' } }] },
  { text: 'made' },
]);

describe('RunRequest.approvalTier', () => {
  it.each([
    // [configured tier, the run's tier, what happens to a mkdir]
    ['auto', undefined, 'runs'],
    ['auto', 'plan', 'denied'],
    ['auto', 'ask', 'asked'],
    ['plan', 'full', 'runs'],
    ['ask', 'auto', 'runs'],
  ] as const)('with [approval] tier %s and approvalTier %s, mkdir %s', async (configured, runTier, expected) => {
    const engine = await newEngine({ models: { scripted: mkdirOnce }, config: { approval: { tier: configured } } });
    const events = recordEvents(engine, { sessionId: `s-${configured}-${runTier}` });
    const { runId } = await engine.submit({
      sessionId: `s-${configured}-${runTier}`,
      input: 'make a directory',
      workspace,
      ...(runTier !== undefined ? { approvalTier: runTier } : {}),
    });
    if (expected === 'asked') {
      await until(() => engine.pendingApprovals().some((r) => r.runId === runId), 'the mkdir asks for approval');
      expect(engine.respondApproval(engine.pendingApprovals()[0]!.approvalId, 'deny')).toBe(true);
    }
    const result = await engine.wait(runId);
    events.close();
    await events.ended;
    const finished = events.ofRun(runId).find((e) => e.type === 'tool.finished');
    expect(result.state).toBe('completed');
    if (expected === 'runs') {
      expect(finished).toMatchObject({ ok: true });
      expect(events.types(runId)).not.toContain('approval.requested');
    } else {
      expect(finished).toMatchObject({ ok: false, error: { code: 'approval_denied' } });
      expect(events.types(runId).includes('approval.requested')).toBe(expected === 'asked');
    }
  });

  it('is inherited by the runs a run delegates to', async () => {
    // The parent delegates (turn 0), the child makes a directory; [approval] tier "plan" would deny it.
    const model = scriptedModel(({ sessionId, turn }) => {
      if (turn > 0) return { text: 'done' };
      return sessionId === 'parent'
        ? { toolCalls: [{ name: 'session_send', args: { session: 'child', message: 'make notes/' } }] }
        : { toolCalls: [{ name: 'file_ops', args: { operation: 'mkdir', path: 'notes' } }] };
    });
    const engine = await newEngine({ models: { scripted: model }, config: { approval: { tier: 'plan' } } });
    const events = recordEvents(engine, { sessionId: 'child' });
    const { runId } = await engine.submit({ sessionId: 'parent', input: 'delegate', workspace, approvalTier: 'full' });
    expect(await engine.wait(runId)).toMatchObject({ state: 'completed' });
    events.close();
    await events.ended;
    expect(events.runEvents().find((e) => e.type === 'tool.finished')).toMatchObject({ ok: true });
  });

  it('is refused when it names no tier', async () => {
    const engine = await newEngine();
    await expect(engine.submit({ sessionId: 's', input: 'x', approvalTier: 'lenient' as never })).rejects.toMatchObject(
      {
        code: 'invalid_request',
      },
    );
  });
});
