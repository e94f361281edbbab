/*
 * The invariant monitor's dispatch and restart checks on fabricated event streams: conflicting
 * calls of a batch never overlap and run in model order (by declared claims, or by the true
 * footprint when a tool's claim lies), and a restart ends every orphaned run and loses nothing.
 */
import { describe, expect, it } from 'vitest';
import { Claims, type Claim } from '../../src/concurrency/index.js';
import { InvariantMonitor } from '../../src/sim/index.js';
import type { InvariantName, ObservedEvent } from '../../src/sim/index.js';

function fabricate() {
  const runSeq = new Map<string, number>();
  const sessionSeq = new Map<string, number>();
  return (type: string, runId: string, sessionId: string, extra: Partial<ObservedEvent> = {}): ObservedEvent => {
    const seq = (runSeq.get(runId) ?? 0) + 1;
    const sSeq = (sessionSeq.get(sessionId) ?? 0) + 1;
    runSeq.set(runId, seq);
    sessionSeq.set(sessionId, sSeq);
    return { type, runId, sessionId, ...extra, seq, sessionSeq: sSeq };
  };
}

const namesOf = (violations: { invariant: InvariantName }[]) => [...new Set(violations.map((v) => v.invariant))].sort();

interface Call {
  id: string;
  tool: string;
  claim: Claim;
  args?: unknown;
}

/** A run r1 that schedules one batch of `calls`, then the test's start/finish sequence. */
function batch(
  calls: Call[],
  steps: string[],
  footprint?: ConstructorParameters<typeof InvariantMonitor>[0]['footprint'],
) {
  const monitor = new InvariantMonitor({
    limits: () => ({ maxGlobal: 8, maxPerAgent: 8 }),
    ...(footprint ? { footprint } : {}),
  });
  const ev = fabricate();
  monitor.observe(ev('run.started', 'r1', 's1'));
  monitor.observe(
    ev('model.message', 'r1', 's1', { toolCalls: calls.map((c) => ({ id: c.id, name: c.tool, args: c.args ?? {} })) }),
  );
  monitor.observe(
    ev('tool.scheduled', 'r1', 's1', { claims: calls.map((c) => ({ callId: c.id, tool: c.tool, claim: c.claim })) }),
  );
  for (const step of steps) {
    // "finish a deferred": a tool.finished with that error code.
    const [what, id, code] = step.split(' ') as ['start' | 'finish', string, string | undefined];
    monitor.observe(
      ev(what === 'start' ? 'tool.started' : 'tool.finished', 'r1', 's1', {
        callId: id,
        ...(code ? { error: { code } } : {}),
      }),
    );
  }
  return monitor;
}

const read = (id: string, path: string): Call => ({ id, tool: 'read', claim: Claims.shared([path]) });
const write = (id: string, path: string): Call => ({ id, tool: 'write', claim: Claims.paths([path]) });

describe('InvariantMonitor: claim-aware dispatch', () => {
  it('accepts non-conflicting calls side by side and conflicting ones one after another, in model order', () => {
    const monitor = batch(
      [read('a', '/w/x'), read('b', '/w/x'), write('c', '/w/y'), write('d', '/w/x')],
      ['start a', 'start b', 'start c', 'finish a', 'finish b', 'start d', 'finish c', 'finish d'],
    );
    expect(monitor.violations()).toEqual([]);
    expect(monitor.checksPerformed()).toBeGreaterThan(0);
  });

  it('detects two conflicting calls running at the same time', () => {
    const monitor = batch([write('a', '/w/x'), write('b', '/w/x/y')], ['start a', 'start b', 'finish a', 'finish b']);
    expect(namesOf(monitor.violations())).toEqual(['tool-overlap']);
  });

  it('detects a call starting before an earlier conflicting call, and one whose earlier conflicting call never ran', () => {
    expect(
      namesOf(
        batch([write('a', '/w/x'), read('b', '/w/x')], ['start b', 'finish b', 'start a', 'finish a']).violations(),
      ),
    ).toEqual(['tool-order']);
    // a was closed without running (deferred, aborted), yet b, which conflicts with it, ran.
    expect(
      namesOf(
        batch([write('a', '/w/x'), read('b', '/w/x')], ['finish a deferred', 'start b', 'finish b']).violations(),
      ),
    ).toEqual(['tool-order']);
    expect(
      namesOf(batch([write('a', '/w/x'), read('b', '/w/x')], ['finish a aborted', 'start b', 'finish b']).violations()),
    ).toEqual(['tool-order']);
    // a never ended, yet b ran.
    expect(
      namesOf(
        batch(
          [write('a', '/w/x'), read('b', '/w/x'), read('c', '/w/y')],
          ['start c', 'finish c', 'start b', 'finish b'],
        ).violations(),
      ),
    ).toEqual(['tool-order']);
  });

  it("lets a call run after an earlier conflicting call failed on its own without running (its wait for another run's claim timed out)", () => {
    const monitor = batch([write('a', '/w/x'), read('b', '/w/x')], ['finish a timeout', 'start b', 'finish b']);
    expect(monitor.violations()).toEqual([]);
  });

  it('ignores the order of calls that do not conflict', () => {
    const monitor = batch([write('a', '/w/x'), write('b', '/w/y')], ['start b', 'start a', 'finish a', 'finish b']);
    expect(monitor.violations()).toEqual([]);
  });

  it('judges by the true footprint when given one: a write that claims shared is caught', () => {
    const lying: Call[] = [
      { id: 'a', tool: 'write', claim: Claims.shared(['/w/x']), args: { path: '/w/x' } },
      { id: 'b', tool: 'write', claim: Claims.shared(['/w/x']), args: { path: '/w/x' } },
    ];
    const steps = ['start a', 'start b', 'finish a', 'finish b'];
    expect(batch(lying, steps).violations()).toEqual([]);
    const truth = ({ tool, args, declared }: { tool: string; args: unknown; declared: Claim }) =>
      tool === 'write' ? Claims.paths([(args as { path: string }).path]) : declared;
    expect(namesOf(batch(lying, steps, truth).violations())).toEqual(['tool-overlap']);
  });

  it('flags a tool.started that no tool.scheduled announced', () => {
    const monitor = new InvariantMonitor({ limits: () => ({ maxGlobal: 8, maxPerAgent: 8 }) });
    const ev = fabricate();
    monitor.observe(ev('run.started', 'r1', 's1'));
    monitor.observe(ev('tool.started', 'r1', 's1', { callId: 'ghost' }));
    expect(namesOf(monitor.violations())).toEqual(['tool-order']);
  });
});

describe('InvariantMonitor: restart recovery', () => {
  it('accepts a recovery that ends every orphaned run and still knows every waiting message', () => {
    const monitor = new InvariantMonitor({ limits: () => ({ maxGlobal: 8, maxPerAgent: 8 }) });
    const ev = fabricate();
    monitor.accepted({ runId: 'a', sessionId: 's1', outcome: 'started' });
    monitor.accepted({ runId: 'b', sessionId: 's1', outcome: 'queued' });
    monitor.observe(ev('run.started', 'a', 's1'));
    monitor.observe(ev('run.queued', 'b', 's1'));
    monitor.restarted();
    monitor.observe(ev('run.failed', 'a', 's1'));
    expect(monitor.checkRecovery((runId) => runId === 'b')).toEqual([]);
  });

  it('detects a run left running and an accepted message the new engine does not know', () => {
    const monitor = new InvariantMonitor({ limits: () => ({ maxGlobal: 8, maxPerAgent: 8 }) });
    const ev = fabricate();
    monitor.accepted({ runId: 'a', sessionId: 's1', outcome: 'started' });
    monitor.accepted({ runId: 'x', sessionId: 's1', outcome: 'steered', intoRunId: 'a' });
    monitor.observe(ev('run.started', 'a', 's1'));
    monitor.restarted();
    const found = monitor.checkRecovery(() => false);
    expect(namesOf(found)).toEqual(['restart-lost', 'restart-running']);
    expect(found.map((v) => v.detail).join('\n')).toMatch(/steer x \(into run a\)/);
  });

  it('counts a later steer as kept when an earlier unconsumed steer into the same run is still known (it will carry both)', () => {
    const monitor = new InvariantMonitor({ limits: () => ({ maxGlobal: 8, maxPerAgent: 8 }) });
    const ev = fabricate();
    monitor.accepted({ runId: 'a', sessionId: 's1', outcome: 'started' });
    monitor.accepted({ runId: 'x', sessionId: 's1', outcome: 'steered', intoRunId: 'a' });
    monitor.accepted({ runId: 'y', sessionId: 's1', outcome: 'steered', intoRunId: 'a' });
    monitor.observe(ev('run.started', 'a', 's1'));
    monitor.observe(ev('run.completed', 'a', 's1'));
    monitor.observe(ev('run.queued', 'x', 's1'));
    monitor.restarted();
    expect(monitor.checkRecovery((runId) => runId === 'x')).toEqual([]);
  });
});

describe('InvariantMonitor: claims across runs', () => {
  /** Runs each in its own session, each with one batch; `steps` are `start <run>/<call>` and `finish <run>/<call>`. */
  function runs(specs: { runId: string; workspace: string; calls: Call[] }[], steps: string[]) {
    const monitor = new InvariantMonitor({ limits: () => ({ maxGlobal: 8, maxPerAgent: 8 }) });
    const ev = fabricate();
    for (const { runId, workspace, calls } of specs) {
      const session = `s-${runId}`;
      monitor.observe(ev('run.started', runId, session, { workspace }));
      monitor.observe(
        ev('model.message', runId, session, {
          toolCalls: calls.map((c) => ({ id: c.id, name: c.tool, args: c.args ?? { id: c.id } })),
        }),
      );
      monitor.observe(
        ev('tool.scheduled', runId, session, {
          claims: calls.map((c) => ({ callId: c.id, tool: c.tool, claim: c.claim })),
        }),
      );
    }
    for (const step of steps) {
      const [what, target] = step.split(' ') as ['start' | 'finish', string];
      const [runId, callId] = target.split('/') as [string, string];
      monitor.observe(ev(what === 'start' ? 'tool.started' : 'tool.finished', runId, `s-${runId}`, { callId }));
    }
    return monitor.violations().map((v) => v.invariant);
  }

  it('flags two runs of one workspace running conflicting calls at once', () => {
    const specs = [
      { runId: 'a', workspace: '/w', calls: [write('a1', '/w/f')] },
      { runId: 'b', workspace: '/w', calls: [write('b1', '/w/f')] },
    ];
    expect(runs(specs, ['start a/a1', 'start b/b1'])).toEqual(['cross-run-overlap']);
    expect(runs(specs, ['start a/a1', 'finish a/a1', 'start b/b1'])).toEqual([]);
  });

  it('lets other workspaces, non-conflicting claims, repeated calls and delegations run side by side', () => {
    expect(
      runs(
        [
          { runId: 'a', workspace: '/w', calls: [write('a1', '/w/f')] },
          { runId: 'b', workspace: '/v', calls: [write('b1', '/w/f')] },
        ],
        ['start a/a1', 'start b/b1'],
      ),
    ).toEqual([]);
    expect(
      runs(
        [
          { runId: 'a', workspace: '/w', calls: [read('a1', '/w/f')] },
          { runId: 'b', workspace: '/w', calls: [read('b1', '/w/f')] },
        ],
        ['start a/a1', 'start b/b1'],
      ),
    ).toEqual([]);
    const repeat: Call = { id: 'a2', tool: 'write', claim: Claims.paths(['/w/f']), args: { id: 'a1' } };
    expect(
      runs(
        [
          { runId: 'a', workspace: '/w', calls: [write('a1', '/w/f'), repeat] },
          { runId: 'b', workspace: '/w', calls: [write('b1', '/w/f')] },
        ],
        ['start a/a1', 'finish a/a1', 'start b/b1', 'start a/a2'],
      ),
    ).toEqual([]);
    const delegation: Call = { id: 'a1', tool: 'session_send', claim: Claims.sessions(['child']) };
    expect(
      runs(
        [
          { runId: 'a', workspace: '/w', calls: [delegation] },
          { runId: 'b', workspace: '/w', calls: [write('b1', '/w/f')] },
        ],
        ['start a/a1', 'start b/b1'],
      ),
    ).toEqual([]);
  });

  it('forgets the calls of a run that ended', () => {
    const specs = [
      { runId: 'a', workspace: '/w', calls: [write('a1', '/w/f')] },
      { runId: 'b', workspace: '/w', calls: [write('b1', '/w/f')] },
    ];
    const monitor = new InvariantMonitor({ limits: () => ({ maxGlobal: 8, maxPerAgent: 8 }) });
    const ev = fabricate();
    for (const { runId, workspace, calls } of specs) {
      monitor.observe(ev('run.started', runId, `s-${runId}`, { workspace }));
      monitor.observe(
        ev('tool.scheduled', runId, `s-${runId}`, {
          claims: calls.map((c) => ({ callId: c.id, tool: c.tool, claim: c.claim })),
        }),
      );
    }
    monitor.observe(ev('tool.started', 'a', 's-a', { callId: 'a1' }));
    monitor.observe(ev('run.cancelled', 'a', 's-a'));
    monitor.observe(ev('tool.started', 'b', 's-b', { callId: 'b1' }));
    expect(monitor.violations()).toEqual([]);
  });
});
