import { SimulatedClock } from 'xstate';
import { describe, expect, it } from 'vitest';
import {
  ApprovalGate,
  SessionGrants,
  summarizeAction,
  type ApprovalDecision,
  type ApprovalGateOptions,
  type ApprovalGateRequest,
  type ApprovalRequest,
  type ApprovalResolution,
} from '../../src/approval/index.js';
import type { ApprovalVerdict } from '../../machines/tool-call.machine.js';
import { deferred } from '../support/deferred.js';
import { settle } from '../support/settle.js';

function setup(options: Partial<ApprovalGateOptions> = {}) {
  const clock = new SimulatedClock();
  const requested: ApprovalRequest[] = [];
  const resolved: ApprovalResolution[] = [];
  let next = 0;
  let timeoutSeconds = 120;
  const grants = new SessionGrants();
  const gate = new ApprovalGate({
    clock,
    timeoutMs: () => timeoutSeconds * 1000,
    grants,
    onRequested: (r) => requested.push(r),
    onResolved: (r) => resolved.push(r),
    newId: () => `ap-${++next}`,
    ...options,
  });
  return { clock, gate, grants, requested, resolved, setTimeoutSeconds: (s: number) => (timeoutSeconds = s) };
}

function call(overrides: Partial<ApprovalGateRequest> = {}): ApprovalGateRequest {
  const args = overrides.args ?? { command: 'rm -rf build' };
  return {
    runId: 'run-1',
    sessionId: 'session-1',
    callId: 'call-1',
    tool: 'bash',
    args,
    summary: summarizeAction(overrides.tool ?? 'bash', args),
    reason: 'tier "ask" asks before bash: it is not read-only',
    unattended: false,
    ...overrides,
  };
}

/** The verdict once settled, or 'pending'. */
function watch(promise: Promise<ApprovalVerdict>) {
  let state: ApprovalVerdict | 'pending' = 'pending';
  void promise.then((v) => (state = v));
  return () => state;
}

describe('ApprovalGate', () => {
  it('asks, and a respond allow_once allows the call', async () => {
    const { gate, requested, resolved } = setup();
    const verdict = gate.request(call());
    expect(requested).toEqual([
      {
        approvalId: 'ap-1',
        runId: 'run-1',
        sessionId: 'session-1',
        callId: 'call-1',
        tool: 'bash',
        action: { tool: 'bash', summary: 'bash: rm -rf build', command: 'rm -rf build', destructive: false },
        reason: 'tier "ask" asks before bash: it is not read-only',
      },
    ]);
    expect(gate.pending().map((r) => r.approvalId)).toEqual(['ap-1']);
    expect(gate.respond('ap-1', 'allow_once')).toBe(true);
    await expect(verdict).resolves.toEqual({ allowed: true });
    expect(resolved).toEqual([
      { approvalId: 'ap-1', runId: 'run-1', callId: 'call-1', decision: 'allow_once', by: 'respond' },
    ]);
    expect(gate.pending()).toEqual([]);
  });

  it('deny fails the call with approval_denied naming the action', async () => {
    const { gate } = setup();
    const verdict = gate.request(call());
    gate.respond('ap-1', 'deny');
    const result = await verdict;
    expect(result).toMatchObject({ allowed: false, error: { code: 'approval_denied' } });
    expect(!result.allowed && result.error.message).toContain('bash: rm -rf build');
  });

  it('denies when nobody answers within timeout_seconds on the engine clock', async () => {
    const { gate, clock, resolved, setTimeoutSeconds } = setup();
    setTimeoutSeconds(30);
    const state = watch(gate.request(call()));
    clock.increment(29_999);
    await settle(1);
    expect(state()).toBe('pending');
    clock.increment(1);
    await settle(1);
    expect(state()).toEqual({
      allowed: false,
      error: { code: 'approval_denied', message: expect.stringContaining('timed out after 30 s') },
    });
    expect(resolved).toEqual([
      { approvalId: 'ap-1', runId: 'run-1', callId: 'call-1', decision: 'timeout', by: 'timeout' },
    ]);
    expect(gate.respond('ap-1', 'allow_once')).toBe(false);
  });

  it('reads the timeout at request time (hot reload)', async () => {
    const { gate, clock, setTimeoutSeconds } = setup();
    setTimeoutSeconds(10);
    const first = watch(gate.request(call({ callId: 'a' })));
    setTimeoutSeconds(60);
    const second = watch(gate.request(call({ callId: 'b' })));
    clock.increment(10_000);
    await settle(1);
    expect(first()).not.toBe('pending');
    expect(second()).toBe('pending');
  });

  it("respond wins over a slower approver, and the approver's late answer is ignored", async () => {
    const answer = deferred<ApprovalDecision>();
    const { gate, resolved } = setup({ approver: () => answer.promise });
    const verdict = gate.request(call());
    expect(gate.respond('ap-1', 'deny')).toBe(true);
    answer.resolve('allow_once');
    await expect(verdict).resolves.toMatchObject({ allowed: false });
    await settle(1);
    expect(resolved).toHaveLength(1);
    expect(resolved[0]).toMatchObject({ decision: 'deny', by: 'respond' });
  });

  it('the approver wins when it answers first; a later respond returns false', async () => {
    const seen: ApprovalRequest[] = [];
    const { gate, resolved, requested } = setup({
      approver: (request) => {
        seen.push(request);
        return Promise.resolve('allow_once');
      },
    });
    const verdict = gate.request(call());
    await expect(verdict).resolves.toEqual({ allowed: true });
    expect(seen).toEqual(requested);
    expect(resolved).toEqual([expect.objectContaining({ decision: 'allow_once', by: 'approver' })]);
    expect(gate.respond('ap-1', 'deny')).toBe(false);
  });

  it('a second respond to the same approval returns false', async () => {
    const { gate } = setup();
    const verdict = gate.request(call());
    expect(gate.respond('ap-1', 'allow_once')).toBe(true);
    expect(gate.respond('ap-1', 'deny')).toBe(false);
    await expect(verdict).resolves.toEqual({ allowed: true });
  });

  it('respond to an unknown id returns false; a bad decision is a TypeError', () => {
    const { gate } = setup();
    void gate.request(call());
    expect(gate.respond('nope', 'allow_once')).toBe(false);
    expect(() => gate.respond('ap-1', 'yes' as ApprovalDecision)).toThrow(/allow_once/);
    expect(gate.pending()).toHaveLength(1);
  });

  it.each([
    ['rejects', () => Promise.reject(new Error('approver offline')), /approver offline/],
    [
      'throws synchronously',
      () => {
        throw new Error('boom');
      },
      /boom/,
    ],
    ['answers nonsense', () => Promise.resolve('sure' as ApprovalDecision), /"sure"/],
  ])('an approver that %s denies (fail closed)', async (_, approver, message) => {
    const { gate, resolved } = setup({ approver: approver as ApprovalGateOptions['approver'] });
    const result = await gate.request(call());
    expect(result).toMatchObject({ allowed: false, error: { code: 'approval_denied', message } });
    expect(resolved).toEqual([expect.objectContaining({ decision: 'deny', by: 'approver' })]);
  });

  it('allow_session grants the identical call for the rest of the session, without asking', async () => {
    const { gate, grants, requested, resolved } = setup();
    const first = gate.request(call());
    gate.respond('ap-1', 'allow_session');
    await expect(first).resolves.toEqual({ allowed: true });

    // Same tool and arguments (key order aside), another call id: allowed at once.
    await expect(gate.request(call({ callId: 'call-2', args: { command: 'rm -rf build' } }))).resolves.toEqual({
      allowed: true,
    });
    expect(requested).toHaveLength(1);
    expect(resolved.at(-1)).toEqual({
      approvalId: 'ap-2',
      runId: 'run-1',
      callId: 'call-2',
      decision: 'allow_session',
      by: 'grant',
    });
    expect(Object.values(grants.toJSON())).toEqual([[expect.stringMatching(/^[0-9a-f]{64}$/)]]);

    // Different arguments: asked again.
    void gate.request(call({ callId: 'call-3', args: { command: 'rm -rf dist' } }));
    expect(requested).toHaveLength(2);
    // Another session: asked again.
    void gate.request(call({ callId: 'call-4', sessionId: 'session-2' }));
    expect(requested).toHaveLength(3);
  });

  it('allow_once grants nothing', async () => {
    const { gate, requested } = setup();
    const first = gate.request(call());
    gate.respond('ap-1', 'allow_once');
    await first;
    void gate.request(call({ callId: 'call-2' }));
    expect(requested).toHaveLength(2);
  });

  it('unattended fails closed at once, without asking or waiting', async () => {
    const approver = () => Promise.resolve<ApprovalDecision>('allow_once');
    const { gate, requested, resolved } = setup({ approver });
    const result = await gate.request(call({ unattended: true }));
    expect(result).toMatchObject({
      allowed: false,
      error: { code: 'approval_unavailable', message: expect.stringContaining('unattended') },
    });
    expect(requested).toEqual([]);
    expect(resolved).toEqual([]);
    expect(gate.pending()).toEqual([]);
  });

  it('an unattended run still uses a grant its session holds', async () => {
    const { gate } = setup();
    const first = gate.request(call());
    gate.respond('ap-1', 'allow_session');
    await first;
    await expect(gate.request(call({ callId: 'call-2', unattended: true }))).resolves.toEqual({ allowed: true });
  });

  it('parallel calls wait side by side and can be answered in reverse order', async () => {
    const { gate, requested } = setup();
    const a = watch(gate.request(call({ callId: 'call-a', args: { command: 'make a' } })));
    const b = watch(gate.request(call({ callId: 'call-b', args: { command: 'make b' } })));
    expect(requested.map((r) => r.callId)).toEqual(['call-a', 'call-b']);
    expect(gate.pendingFor('run-1', 'call-b')?.approvalId).toBe('ap-2');
    expect(gate.pendingFor('run-2', 'call-b')).toBeUndefined();

    gate.respond('ap-2', 'deny');
    await settle(1);
    expect(a()).toBe('pending');
    expect(b()).toMatchObject({ allowed: false });
    expect(gate.pending().map((r) => r.callId)).toEqual(['call-a']);

    gate.respond('ap-1', 'allow_once');
    await settle(1);
    expect(a()).toEqual({ allowed: true });
    expect(gate.pendingFor('run-1', 'call-a')).toBeUndefined();
  });

  it("the run's signal cancels the wait and cleans up", async () => {
    const { gate, clock, resolved } = setup();
    const controller = new AbortController();
    const verdict = gate.request(call({ signal: controller.signal }));
    controller.abort(new Error('run cancelled'));
    await expect(verdict).resolves.toMatchObject({ allowed: false, error: { code: 'cancelled' } });
    expect(resolved).toEqual([expect.objectContaining({ decision: 'cancelled', by: 'cancelled' })]);
    expect(gate.pending()).toEqual([]);
    expect(gate.respond('ap-1', 'allow_once')).toBe(false);
    clock.increment(1_000_000);
    expect(resolved).toHaveLength(1);
  });

  it('an already aborted signal settles at once without asking', async () => {
    const { gate, requested } = setup();
    const result = await gate.request(call({ signal: AbortSignal.abort() }));
    expect(result).toMatchObject({ allowed: false, error: { code: 'cancelled' } });
    expect(requested).toEqual([]);
  });

  it('an answer given inside onRequested settles, and the approver is then not asked', async () => {
    let asked = false;
    let gate!: ApprovalGate;
    ({ gate } = setup({
      onRequested: (r) => gate.respond(r.approvalId, 'allow_once'),
      approver: () => {
        asked = true;
        return Promise.resolve('deny');
      },
    }));
    await expect(gate.request(call())).resolves.toEqual({ allowed: true });
    expect(asked).toBe(false);
  });

  it('an onRequested that throws withdraws the approval', async () => {
    const { gate } = setup({
      onRequested: () => {
        throw new Error('log closed');
      },
    });
    await expect(gate.request(call())).rejects.toThrow('log closed');
    expect(gate.pending()).toEqual([]);
  });
});
