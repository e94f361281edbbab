/* The update mapping: run events in, ACP session updates out, for sequences a session really logs. */
import { describe, expect, it } from 'vitest';
import { SessionUpdates } from '../../src/acp/session-updates.js';
import { Claims, describeClaim, type Claim } from '../../src/concurrency/index.js';
import type { RunEvent, RunEventData, RunEventType } from '../../src/core/run-events.js';

let seq = 0;
function event<K extends RunEventType>(type: K, data: RunEventData[K], runId = 'r1'): RunEvent {
  seq += 1;
  return { type, runId, sessionId: 's', seq, sessionSeq: seq, at: '2026-01-01T00:00:00.000Z', ...data } as RunEvent;
}

const calls = [
  { id: 'c0', name: 'file_read', args: { path: 'a.txt' } },
  { id: 'c1', name: 'file_read', args: { path: 'b.txt' } },
  { id: 'c2', name: 'file_edit', args: { path: 'a.txt', old: 'x', new: 'y' } },
];
const claims: Claim[] = [Claims.shared(['/w/a.txt']), Claims.shared(['/w/b.txt']), Claims.paths(['/w/a.txt'])];

function scheduled(
  runId = 'r1',
  groups: [number, number][] = [
    [0, 2],
    [2, 3],
  ],
  of = calls,
) {
  return event(
    'tool.scheduled',
    {
      turn: 0,
      mode: 'groups',
      concurrency: 8,
      groups,
      claims: of.map((c, i) => ({ callId: c.id, tool: c.name, claim: claims[i]!, label: describeClaim(claims[i]!) })),
      boundaries: [],
    },
    runId,
  );
}

const finished = (callId: string, ok = true, runId = 'r1') =>
  event(
    'tool.finished',
    { callId, ok, durationMs: 1, ...(ok ? { output: 'fine' } : { error: { code: 'boom', message: 'it broke' } }) },
    runId,
  );

describe('SessionUpdates', () => {
  it('streams text deltas as message chunks, and a final text only when it was not streamed', () => {
    const updates = new SessionUpdates('/w');
    expect(updates.map(event('model.delta', { turn: 0, text: 'Hel' }))).toEqual([
      { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'Hel' } },
    ]);
    expect(updates.map(event('model.message', { turn: 0, text: 'Hel', toolCalls: [] }))).toEqual([]);
    expect(updates.map(event('model.message', { turn: 1, text: 'Whole', toolCalls: [] }))).toEqual([
      { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'Whole' } },
    ]);
  });

  it('announces a batch as pending tool calls and a plan of its groups, then follows each call and group', () => {
    const updates = new SessionUpdates('/w');
    updates.map(event('model.message', { turn: 0, text: '', toolCalls: calls }));
    const announced = updates.map(scheduled());
    expect(announced.slice(0, 3)).toMatchObject([
      {
        sessionUpdate: 'tool_call',
        toolCallId: 'r1/c0',
        title: 'Read a.txt',
        kind: 'read',
        status: 'pending',
        locations: [{ path: '/w/a.txt' }],
        rawInput: { path: 'a.txt' },
      },
      { sessionUpdate: 'tool_call', toolCallId: 'r1/c1', title: 'Read b.txt', kind: 'read', status: 'pending' },
      {
        sessionUpdate: 'tool_call',
        toolCallId: 'r1/c2',
        title: 'Edit a.txt',
        kind: 'edit',
        content: [{ type: 'diff', path: '/w/a.txt', oldText: 'x', newText: 'y' }],
      },
    ]);
    expect(announced[3]).toEqual({
      sessionUpdate: 'plan',
      entries: [
        { content: 'Step 1 of 2: in parallel, Read a.txt · Read b.txt', priority: 'medium', status: 'pending' },
        { content: 'Step 2 of 2: Edit a.txt', priority: 'medium', status: 'pending' },
      ],
    });
    const statuses = (list: ReturnType<SessionUpdates['map']>) =>
      list.map((u) =>
        u.sessionUpdate === 'plan'
          ? `plan ${u.entries.map((e) => e.status).join(',')}`
          : `${(u as { toolCallId: string }).toolCallId} ${(u as { status: string }).status}`,
      );
    expect(statuses(updates.map(event('tool.started', { callId: 'c0', tool: 'file_read', args: {} })))).toEqual([
      'r1/c0 in_progress',
      'plan in_progress,pending',
    ]);
    expect(statuses(updates.map(event('tool.started', { callId: 'c1', tool: 'file_read', args: {} })))).toEqual([
      'r1/c1 in_progress',
    ]);
    expect(statuses(updates.map(finished('c1')))).toEqual(['r1/c1 completed']);
    expect(statuses(updates.map(finished('c0', false)))).toEqual(['r1/c0 failed', 'plan completed,pending']);
    expect(statuses(updates.map(event('tool.started', { callId: 'c2', tool: 'file_edit', args: {} })))).toEqual([
      'r1/c2 in_progress',
      'plan completed,in_progress',
    ]);
    const last = updates.map(finished('c2'));
    expect(statuses(last)).toEqual(['r1/c2 completed', 'plan completed,completed']);
    expect(last[0]).toMatchObject({ content: [{ type: 'diff', oldText: 'x', newText: 'y' }], rawOutput: 'fine' });
  });

  it('shows a failure as its code and message', () => {
    const updates = new SessionUpdates('/w');
    updates.map(event('model.message', { turn: 0, text: '', toolCalls: calls.slice(0, 1) }));
    updates.map(scheduled('r1', [[0, 1]], calls.slice(0, 1)));
    expect(updates.map(finished('c0', false))).toEqual([
      {
        sessionUpdate: 'tool_call_update',
        toolCallId: 'r1/c0',
        status: 'failed',
        content: [{ type: 'content', content: { type: 'text', text: 'boom: it broke' } }],
        rawOutput: { error: { code: 'boom', message: 'it broke' } },
      },
    ]);
  });

  it('announces no plan for a batch of one call', () => {
    const updates = new SessionUpdates('/w');
    updates.map(event('model.message', { turn: 0, text: '', toolCalls: calls.slice(0, 1) }));
    expect(updates.map(scheduled('r1', [[0, 1]], calls.slice(0, 1))).map((u) => u.sessionUpdate)).toEqual([
      'tool_call',
    ]);
  });

  it('keeps calls of different runs apart although their call ids repeat', () => {
    const updates = new SessionUpdates('/w');
    for (const runId of ['r1', 'r2']) {
      updates.map(event('model.message', { turn: 0, text: '', toolCalls: calls.slice(0, 1) }, runId));
      updates.map(scheduled(runId, [[0, 1]], calls.slice(0, 1)));
    }
    expect(updates.toolCall('r1', 'c0')?.toolCallId).toBe('r1/c0');
    expect(updates.toolCall('r2', 'c0')?.toolCallId).toBe('r2/c0');
    updates.map(finished('c0', true, 'r1'));
    expect(updates.toolCall('r1', 'c0')).toBeUndefined();
    expect(updates.toolCall('r2', 'c0')?.facts).toMatchObject({ tool: 'file_read', args: { path: 'a.txt' } });
    // A run that ends leaves nothing of its calls behind.
    expect(updates.map(event('run.cancelled', { reason: 'stopped' }, 'r2'))).toEqual([]);
    expect(updates.toolCall('r2', 'c0')).toBeUndefined();
  });

  it('takes an allowed call back to in_progress after its permission request; a denied one waits for its result', () => {
    const updates = new SessionUpdates('/w');
    updates.map(event('model.message', { turn: 0, text: '', toolCalls: calls.slice(2) }));
    updates.map(scheduled('r1', [[0, 1]], calls.slice(2)));
    updates.map(event('approval.requested', { approvalId: 'a1', callId: 'c2', action: {} }));
    expect(
      updates.map(event('approval.resolved', { approvalId: 'a1', decision: 'allow_session', by: 'respond' })),
    ).toEqual([{ sessionUpdate: 'tool_call_update', toolCallId: 'r1/c2', status: 'in_progress' }]);
    updates.map(event('approval.requested', { approvalId: 'a2', callId: 'c2', action: {} }));
    expect(updates.map(event('approval.resolved', { approvalId: 'a2', decision: 'timeout', by: 'timeout' }))).toEqual(
      [],
    );
  });
});
