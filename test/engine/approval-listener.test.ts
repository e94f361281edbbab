/*
 * engine.onApprovalRequested (issue 26.7): whoever may answer an approval hears of it through a
 * listener, not by reading the engine-wide event stream. The listener is called once per
 * request, after approval.requested is in the run's log; unsubscribing stops it; a listener
 * that throws reaches onError and the call still waits for its answer.
 */
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApprovalRequest } from '../../src/approval/index.js';
import { scriptedModel } from '../../src/model/index.js';
import { sandboxWorkspace } from '../sandbox/sandbox-workspace.js';
import { engineFixture } from './fixtures.js';

const newEngine = engineFixture();
let workspace: string;

beforeAll(async () => {
  workspace = await sandboxWorkspace('switchyard-approval-listener-');
});
afterAll(async () => {
  await rm(workspace, { recursive: true, force: true });
});

// Under tier "ask", each mkdir asks for approval.
const twoMkdirs = scriptedModel([
  { toolCalls: [{ name: 'file_ops', args: { operation: 'mkdir', path: 'one' } }] },
  { toolCalls: [{ name: 'file_ops', args: { operation: 'mkdir', path: 'two' } }] },
  { text: 'made' },
]);

describe('engine.onApprovalRequested', () => {
  it('tells each listener of each request until it unsubscribes', async () => {
    const engine = await newEngine({ models: { scripted: twoMkdirs }, config: { approval: { tier: 'ask' } } });
    const first: ApprovalRequest[] = [];
    const all: ApprovalRequest[] = [];
    const stopFirst = engine.onApprovalRequested((request) => first.push(request));
    engine.onApprovalRequested((request) => {
      all.push(request);
      queueMicrotask(() => {
        // Unsubscribed before the first call is answered, so before the second one asks.
        stopFirst();
        engine.respondApproval(request.approvalId, 'allow_once');
      });
    });
    const { runId } = await engine.submit({ sessionId: 's', input: 'make two directories', workspace });
    expect(await engine.wait(runId)).toMatchObject({ state: 'completed' });
    expect(all).toHaveLength(2);
    expect(first).toEqual([all[0]]);
    expect(all[0]).toMatchObject({ runId, sessionId: 's', tool: 'file_ops', action: { tool: 'file_ops' } });
    const requested = (await engine.history(runId)).filter((e) => e.type === 'approval.requested');
    expect(requested.map((e) => (e as { approvalId: string }).approvalId)).toEqual(all.map((r) => r.approvalId));
  });

  it('a listener that throws reaches onError; the call still waits for its answer', async () => {
    const errors: unknown[] = [];
    const engine = await newEngine({
      models: { scripted: twoMkdirs },
      config: { approval: { tier: 'ask' } },
      onError: (error) => errors.push(error),
    });
    engine.onApprovalRequested(() => {
      throw new Error('a broken listener');
    });
    engine.onApprovalRequested((request) =>
      queueMicrotask(() => engine.respondApproval(request.approvalId, 'allow_once')),
    );
    const { runId } = await engine.submit({ sessionId: 's', input: 'make two directories', workspace });
    expect(await engine.wait(runId)).toMatchObject({ state: 'completed' });
    const finished = (await engine.history(runId)).filter((e) => e.type === 'tool.finished');
    expect(finished).toMatchObject([{ ok: true }, { ok: true }]);
    expect(errors).toEqual([new Error('a broken listener'), new Error('a broken listener')]);
  });
});
