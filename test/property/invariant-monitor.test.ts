/*
 * The invariant monitor on fabricated event streams: it stays quiet on a well-formed log and
 * names each breach it is shown — a checker that cannot fail proves nothing.
 */
import { describe, expect, it } from 'vitest';
import { InvariantMonitor } from '../../src/sim/index.js';
import type { InvariantName, Limits, ObservedEvent } from '../../src/sim/index.js';

/** Builds events with seq and sessionSeq counted per run and per session unless given. */
function fabricate() {
  const runSeq = new Map<string, number>();
  const sessionSeq = new Map<string, number>();
  return (type: string, runId: string, sessionId: string, extra: Partial<ObservedEvent> = {}): ObservedEvent => {
    const seq = extra.seq ?? (runSeq.get(runId) ?? 0) + 1;
    const sSeq = extra.sessionSeq ?? (sessionSeq.get(sessionId) ?? 0) + 1;
    runSeq.set(runId, seq);
    sessionSeq.set(sessionId, sSeq);
    return { type, runId, sessionId, ...extra, seq, sessionSeq: sSeq };
  };
}

function monitorWith(limits: Limits = { maxGlobal: 8, maxPerAgent: 3 }) {
  let current = limits;
  const monitor = new InvariantMonitor({ limits: () => current });
  return { monitor, setLimits: (next: Limits) => (current = next) };
}

const namesOf = (violations: { invariant: InvariantName }[]) => [...new Set(violations.map((v) => v.invariant))].sort();

describe('InvariantMonitor', () => {
  it('finds nothing wrong in a well-formed log with steers, a follow-up and a rejection', () => {
    const { monitor } = monitorWith();
    const ev = fabricate();
    monitor.accepted({ runId: 'a', sessionId: 's1', outcome: 'started' });
    monitor.accepted({ runId: 'x', sessionId: 's1', outcome: 'steered', intoRunId: 'a' });
    monitor.accepted({ runId: 'y', sessionId: 's1', outcome: 'steered', intoRunId: 'a' });
    monitor.accepted({ runId: 'z', sessionId: 's1', outcome: 'steered', intoRunId: 'a' });
    monitor.rejected('full');
    for (const event of [
      ev('run.started', 'a', 's1', { agentId: 'main' }),
      ev('run.steered', 'a', 's1', { steerId: 'x' }),
      ev('turn.started', 'a', 's1'),
      ev('run.completed', 'a', 's1'),
      // y and z arrived too late: y names the follow-up that carries both.
      ev('run.queued', 'y', 's1'),
      ev('run.started', 'y', 's1', { agentId: 'main' }),
      ev('run.cancelled', 'y', 's1'),
      { type: 'engine.running', seq: 1, running: [] },
    ]) {
      monitor.observe(event);
    }
    expect(monitor.unfinished()).toEqual([]);
    expect(monitor.check()).toEqual([]);
  });

  it("detects a gap in a run's seq", () => {
    const { monitor } = monitorWith();
    const ev = fabricate();
    monitor.observe(ev('run.started', 'a', 's1'));
    monitor.observe(ev('turn.started', 'a', 's1', { seq: 3 }));
    expect(namesOf(monitor.violations())).toEqual(['run-seq']);
  });

  it("detects a gap in a session's sessionSeq", () => {
    const { monitor } = monitorWith();
    const ev = fabricate();
    monitor.observe(ev('run.started', 'a', 's1'));
    monitor.observe(ev('run.completed', 'a', 's1', { sessionSeq: 5 }));
    expect(namesOf(monitor.violations())).toEqual(['session-seq']);
  });

  it('detects two terminal events, and an event after the terminal one', () => {
    const { monitor } = monitorWith();
    const ev = fabricate();
    monitor.observe(ev('run.started', 'a', 's1'));
    monitor.observe(ev('run.completed', 'a', 's1'));
    monitor.observe(ev('run.failed', 'a', 's1'));
    expect(namesOf(monitor.violations())).toEqual(['terminal-last']);
  });

  it('detects a start after the terminal event, and a second start', () => {
    const { monitor } = monitorWith();
    const ev = fabricate();
    monitor.observe(ev('run.started', 'a', 's1'));
    monitor.observe(ev('run.started', 'a', 's1'));
    monitor.observe(ev('run.cancelled', 'a', 's1'));
    monitor.observe(ev('run.started', 'a', 's1'));
    const violations = monitor.violations();
    expect(namesOf(violations)).toEqual(['start-once']);
    expect(violations).toHaveLength(2);
  });

  it('detects two running runs in one session', () => {
    const { monitor } = monitorWith();
    const ev = fabricate();
    monitor.observe(ev('run.started', 'a', 's1'));
    monitor.observe(ev('run.started', 'b', 's2'));
    monitor.observe(ev('run.started', 'c', 's1'));
    expect(namesOf(monitor.violations())).toEqual(['session-exclusive']);
    expect(monitor.runningRuns().sort()).toEqual(['a', 'b', 'c']);
  });

  it('allows the next run of a session once the previous one ended', () => {
    const { monitor } = monitorWith();
    const ev = fabricate();
    monitor.observe(ev('run.started', 'a', 's1'));
    monitor.observe(ev('run.failed', 'a', 's1'));
    monitor.observe(ev('run.started', 'b', 's1'));
    expect(monitor.violations()).toEqual([]);
  });

  it("detects a start beyond the global limit and beyond an agent's limit", () => {
    const { monitor } = monitorWith({ maxGlobal: 2, maxPerAgent: 1 });
    const ev = fabricate();
    monitor.observe(ev('run.started', 'a', 's1', { agentId: 'main' }));
    monitor.observe(ev('run.started', 'b', 's2', { agentId: 'main' }));
    expect(namesOf(monitor.violations())).toEqual(['agent-limit']);
    monitor.observe(ev('run.started', 'c', 's3', { agentId: 'other' }));
    expect(namesOf(monitor.violations())).toEqual(['agent-limit', 'global-limit']);
  });

  it('lets runs keep their permits after a shrink, but flags a new start above the new limit', () => {
    const { monitor, setLimits } = monitorWith({ maxGlobal: 3, maxPerAgent: 3 });
    const ev = fabricate();
    for (const [runId, sessionId] of [
      ['a', 's1'],
      ['b', 's2'],
      ['c', 's3'],
    ] as const) {
      monitor.observe(ev('run.started', runId, sessionId, { agentId: 'main' }));
    }
    setLimits({ maxGlobal: 1, maxPerAgent: 1 });
    monitor.observe(ev('run.completed', 'a', 's1'));
    expect(monitor.violations()).toEqual([]);
    monitor.observe(ev('run.started', 'd', 's1', { agentId: 'main' }));
    expect(namesOf(monitor.violations())).toEqual(['agent-limit', 'global-limit']);
  });

  it('detects an accepted message without an outcome, a run nobody submitted, and a run without a terminal', () => {
    const { monitor } = monitorWith();
    const ev = fabricate();
    monitor.accepted({ runId: 'a', sessionId: 's1', outcome: 'queued' });
    monitor.accepted({ runId: 'lost', sessionId: 's1', outcome: 'steered', intoRunId: 'a' });
    monitor.observe(ev('run.started', 'a', 's1'));
    monitor.observe(ev('run.started', 'ghost', 's2'));
    expect(monitor.violations()).toEqual([]);
    expect(monitor.unfinished()).toEqual(['a', 'lost']);
    const violations = monitor.check();
    expect(namesOf(violations)).toEqual(['accounting', 'terminal-last']);
    expect(violations.map((v) => v.detail).join('\n')).toMatch(
      /lost reached no outcome[\s\S]*ghost has events but no submit/,
    );
  });

  it('detects a steer with two outcomes, and one consumed by another run than it was sent into', () => {
    const { monitor } = monitorWith();
    const ev = fabricate();
    monitor.accepted({ runId: 'a', sessionId: 's1', outcome: 'started' });
    monitor.accepted({ runId: 'b', sessionId: 's2', outcome: 'started' });
    monitor.accepted({ runId: 'x', sessionId: 's1', outcome: 'steered', intoRunId: 'a' });
    monitor.observe(ev('run.started', 'a', 's1'));
    monitor.observe(ev('run.started', 'b', 's2'));
    monitor.observe(ev('run.steered', 'b', 's2', { steerId: 'x' }));
    monitor.observe(ev('run.completed', 'a', 's1'));
    monitor.observe(ev('run.completed', 'b', 's2'));
    monitor.observe(ev('run.started', 'x', 's1'));
    monitor.observe(ev('run.completed', 'x', 's1'));
    const details = monitor.check().map((v) => `${v.invariant}: ${v.detail}`);
    expect(details).toEqual([
      expect.stringMatching(/^accounting: accepted message x reached 2 outcomes/),
      'accounting: steer x was sent into run a but consumed by run b',
    ]);
  });

  it('detects a steer consumed twice', () => {
    const { monitor } = monitorWith();
    const ev = fabricate();
    monitor.observe(ev('run.started', 'a', 's1'));
    monitor.observe(ev('run.steered', 'a', 's1', { steerId: 'x' }));
    monitor.observe(ev('run.steered', 'a', 's1', { steerId: 'x' }));
    expect(namesOf(monitor.violations())).toEqual(['accounting']);
  });

  it('detects events of a rejected message, whichever comes first', () => {
    const { monitor } = monitorWith();
    const ev = fabricate();
    monitor.rejected('r1');
    monitor.observe(ev('run.queued', 'r1', 's1'));
    monitor.observe(ev('run.started', 'r2', 's2'));
    monitor.rejected('r2');
    expect(monitor.violations().map((v) => v.invariant)).toEqual(['rejected-silent', 'rejected-silent']);
  });

  it('detects engine.running naming a run that never started, tolerating it arriving before run.started', () => {
    const { monitor } = monitorWith();
    const ev = fabricate();
    monitor.accepted({ runId: 'a', sessionId: 's1', outcome: 'started' });
    monitor.observe({ type: 'engine.running', seq: 1, running: ['a', 'nobody'] });
    monitor.observe(ev('run.started', 'a', 's1'));
    monitor.observe(ev('run.completed', 'a', 's1'));
    expect(monitor.violations()).toEqual([]);
    expect(monitor.check()).toEqual([
      { invariant: 'engine-running', detail: 'engine.running listed nobody, which never started' },
    ]);
  });
});
