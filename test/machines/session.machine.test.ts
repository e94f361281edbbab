/*
 * The session statechart (docs/runs.md, "One active run per session", "Busy sessions") as a model:
 * xstate/graph finds a shortest path to every reachable state under small limits, each path is
 * extended by every event of the alphabet (so every transition is taken once), and each is replayed
 * on a real actor against a reference bookkeeping of slot and lane. Explicit tables below pin the
 * steer, interrupt, lane and purge rules.
 */
import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import { createActor, SimulatedClock } from 'xstate';
import { getShortestPaths } from 'xstate/graph';
import { canSteer, sessionMachine } from '../../machines/session.machine.js';
import type {
  BusyPolicy,
  SessionContext,
  SessionEmitted,
  SessionEvent,
  SessionInput,
  SessionMessage,
} from '../../machines/session.machine.js';

const limits = { laneCapacity: 2, maxPendingSteers: 1, laneMaxWaitMs: 60_000 };
const input: SessionInput = { sessionId: 's1', ...limits };

function session(sessionInput: SessionInput = input) {
  const clock = new SimulatedClock();
  /** Every event the session itself processed, delayed ones included. */
  const received: SessionEvent['type'][] = [];
  const actor = createActor(sessionMachine, {
    input: sessionInput,
    clock,
    inspect: (inspection) => {
      if (inspection.type === '@xstate.event' && inspection.actorRef === actor)
        received.push(inspection.event.type as SessionEvent['type']);
    },
  });
  const emitted: SessionEmitted[] = [];
  actor.on('*', (event) => emitted.push(event));
  actor.start();
  /** Sends one event and returns what the session announced in response. */
  const send = (event: SessionEvent): SessionEmitted[] => {
    const mark = emitted.length;
    actor.send(event);
    return emitted.slice(mark);
  };
  const context = () => actor.getSnapshot().context;
  return { actor, clock, emitted, received, send, context };
}

const submit = (runId: string, policy: BusyPolicy, extra: Partial<SessionMessage> = {}): SessionEvent => ({
  type: 'SUBMIT',
  message: { runId, policy, plainText: true, ...extra },
});

// ---------------------------------------------------------------------------------------------
// Model-based.

type SessionSnapshot = ReturnType<typeof sessionMachine.transition>;

/** Run ids in the model are the smallest ones free in the state, so equal situations serialize equal. */
function freeRunId(snapshot: SessionSnapshot): string {
  const used = new Set([snapshot.context.active?.runId, ...snapshot.context.lane.map((entry) => entry.runId)]);
  let k = 0;
  while (used.has(`m${k}`)) k += 1;
  return `m${k}`;
}

const ELSEWHERE = 'some-other-run';
/** The one key of mergeable `collect` messages in the model (the engine's rule is tested in test/engine). */
const COLLECT_KEY = 'k';

function alphabet(snapshot: SessionSnapshot): SessionEvent[] {
  const runId = freeRunId(snapshot);
  const { active, lane } = snapshot.context;
  const events: SessionEvent[] = [];
  for (const policy of ['steer', 'interrupt', 'queue'] as const) {
    for (const plainText of [true, false]) events.push({ type: 'SUBMIT', message: { runId, policy, plainText } });
  }
  events.push(
    submit(runId, 'reject'),
    submit(runId, 'rollback'),
    submit(runId, 'collect', { collectKey: COLLECT_KEY }),
  );
  if (active) events.push(submit(runId, 'steer', { expectedRunId: active.runId }));
  events.push(submit(runId, 'steer', { expectedRunId: ELSEWHERE }));
  events.push({ type: 'ADMIT_NEXT' }, { type: 'PURGE' });
  if (active) {
    events.push(
      { type: 'RUN_STARTED', runId: active.runId },
      { type: 'STEERS_CONSUMED', runId: active.runId, count: 1 },
      { type: 'RUN_ENDED', runId: active.runId },
    );
  }
  for (const entry of lane) {
    events.push(
      { type: 'CANCEL_QUEUED', runId: entry.runId, reason: 'user' },
      { type: 'LANE_EXPIRED', runId: entry.runId },
    );
  }
  return events;
}

/**
 * Lane operations, taken once from every reachable state (not explored further: reordering the
 * lane multiplies the states without new decisions; test/property covers sequences of them).
 */
function laneOperations(snapshot: SessionSnapshot): SessionEvent[] {
  const { active, lane } = snapshot.context;
  const events: SessionEvent[] = [];
  for (const entry of lane) {
    events.push(
      { type: 'WITHDRAW', runId: entry.runId },
      { type: 'MOVE', runId: entry.runId, position: 1 },
      { type: 'PROMOTE', runId: entry.runId },
      { type: 'EDIT', runId: entry.runId },
    );
  }
  // A lane operation on the message holding the slot: it no longer waits.
  if (active) events.push({ type: 'WITHDRAW', runId: active.runId }, { type: 'EDIT', runId: active.runId });
  return events;
}

const serializeSession = (snapshot: SessionSnapshot) =>
  JSON.stringify({ value: snapshot.value, active: snapshot.context.active, lane: snapshot.context.lane });

const statePaths = getShortestPaths(sessionMachine, { input, events: alphabet, serializeState: serializeSession });

/** Every reachable state, then every event from it: each transition of the model taken once. */
const transitionPaths = statePaths.flatMap((path) =>
  [...alphabet(path.state), ...laneOperations(path.state)].map((event) => ({
    events: [...path.steps.slice(1).map((step) => step.event), event],
    from: path.state,
  })),
);

function label(event: SessionEvent): string {
  if (event.type !== 'SUBMIT') return event.type;
  const m = event.message;
  const expected =
    m.expectedRunId === undefined
      ? ''
      : m.expectedRunId === ELSEWHERE
        ? ', expectedRunId mismatching'
        : ', expectedRunId matching';
  return `SUBMIT ${m.policy}${m.plainText ? ' plain' : ' with attachments/overrides'}${expected}`;
}

/** Cheap checks for the hot replay loop; on failure they hand over to expect for a readable diff. */
function holds(condition: boolean, message: string): void {
  if (!condition) expect.fail(message);
}
function same(actual: unknown, expected: unknown, message: string): void {
  if (!isDeepStrictEqual(actual, expected)) expect(actual, message).toEqual(expected);
}

/**
 * Replays model events on a real actor with fresh run ids, and keeps its own account of the slot
 * and the lane from what the session announces; every step must agree with it.
 */
function replay(events: SessionEvent[]) {
  const s = session();
  const rename = new Map<string, string>();
  let fresh = 0;
  const firstDecision = new Map<string, SessionEmitted['type']>();
  const leftLane = new Set<string>();
  let lane: string[] = [];
  let active: { runId: string; started: boolean; viaInterrupt: boolean; viaRollback: boolean } | undefined;
  const collecting = new Set<string>();
  const rollbacks = new Set<string>();
  const interrupts = new Set<string>();
  const plain = new Set<string>();
  /** A rollback message → the run it rolled back (its run is told when it starts). */
  const rolledBackBy = new Map<string, string>();

  const real = (runId: string) => rename.get(runId) ?? runId;
  const translate = (event: SessionEvent): SessionEvent => {
    switch (event.type) {
      case 'SUBMIT': {
        const runId = `run-${++fresh}`;
        rename.set(event.message.runId, runId);
        const { expectedRunId } = event.message;
        return {
          type: 'SUBMIT',
          message: {
            ...event.message,
            runId,
            ...(expectedRunId !== undefined ? { expectedRunId: real(expectedRunId) } : {}),
          },
        };
      }
      case 'RUN_STARTED':
      case 'RUN_ENDED':
      case 'STEERS_CONSUMED':
      case 'CANCEL_QUEUED':
      case 'LANE_EXPIRED':
      case 'WITHDRAW':
      case 'MOVE':
      case 'PROMOTE':
      case 'EDIT':
        return { ...event, runId: real(event.runId) };
      default:
        return event;
    }
  };
  const leave = (runId: string, how: string) => {
    holds(lane.includes(runId), `${runId} leaves the lane (${how}) only from it`);
    holds(!leftLane.has(runId), `${runId} leaves the lane once`);
    leftLane.add(runId);
    lane = lane.filter((id) => id !== runId);
  };
  const admit = (runId: string) => {
    holds(active === undefined, `admit ${runId} while ${active?.runId} is active`);
    active = { runId, started: false, viaInterrupt: false, viaRollback: rollbacks.has(runId) };
  };

  events.forEach((modelEvent, index) => {
    const event = translate(modelEvent);
    const before = s.actor.getSnapshot();
    const out = s.send(event);
    const where = `step ${index}: ${label(event)}`;
    const after = s.actor.getSnapshot();

    if (event.type === 'SUBMIT') {
      const m = event.message;
      const decisions = out.filter(
        (e) => e.type === 'admit' || e.type === 'steer' || e.type === 'queued' || e.type === 'rejected',
      );
      holds(decisions.length === 1, `${where}: exactly one first decision`);
      const [decision] = decisions;
      holds(
        decision!.runId === m.runId && !firstDecision.has(m.runId),
        `${where}: the decision is about the new message`,
      );
      firstDecision.set(m.runId, decision!.type);
      const interruptQueued = m.policy === 'interrupt' && decision!.type === 'queued';
      const rollbackQueued = m.policy === 'rollback' && decision!.type === 'queued';
      if (m.policy === 'rollback') rollbacks.add(m.runId);
      if (m.policy === 'collect') collecting.add(m.runId);
      if (m.policy === 'interrupt') interrupts.add(m.runId);
      if (m.plainText) plain.add(m.runId);
      if (rollbackQueued && active && !(!active.started && active.viaRollback)) rolledBackBy.set(m.runId, active.runId);
      // Superseded entries leave before the newcomer joins.
      for (const e of out) {
        if (e.type === 'dropped') {
          holds(
            (interruptQueued || rollbackQueued) && e.reason === 'superseded',
            `${where}: only an interrupt or a rollback supersedes`,
          );
          holds(
            rollbackQueued === rollbacks.has(e.runId),
            `${where}: a rollback supersedes only rollbacks, an interrupt only interrupts`,
          );
          leave(e.runId, 'superseded');
        }
      }
      switch (decision!.type) {
        case 'rejected':
          same(
            decision!.code,
            m.policy === 'reject' ? 'session_busy' : 'lane_full',
            `${where}: reject refuses session_busy, others only for a full lane`,
          );
          holds(
            m.policy !== 'reject' || active !== undefined || lane.length > 0,
            `${where}: reject refuses only a busy session`,
          );
          same(out, [decision], `${where}: a rejected message announces nothing else`);
          same(after.context, before.context, `${where}: a rejected message changes nothing`);
          same(after.value, before.value, where);
          break;
        case 'admit':
          admit(m.runId);
          active!.viaInterrupt = m.policy === 'interrupt';
          break;
        case 'steer':
          holds(m.policy === 'steer' && m.plainText, `${where}: only plain-text steer messages steer`);
          same(decision, { type: 'steer', runId: m.runId, intoRunId: active?.runId }, where);
          break;
        case 'queued':
          holds(m.policy !== 'reject', `${where}: a reject message never waits`);
          if (m.policy === 'rollback') lane.unshift(m.runId);
          else lane.push(m.runId);
          same(
            decision,
            { type: 'queued', runId: m.runId, position: m.policy === 'rollback' ? 1 : lane.length },
            where,
          );
          break;
      }
      const cancels = out.filter((e) => e.type === 'cancelActive');
      if (rollbackQueued && active) {
        const replaced = !active.started && active.viaRollback;
        same(
          cancels,
          [
            {
              type: 'cancelActive',
              runId: active.runId,
              reason: replaced ? 'superseded' : 'rolled_back',
              ...(replaced ? {} : { by: m.runId }),
            },
          ],
          where,
        );
      } else if (interruptQueued && active && (active.started || active.viaInterrupt)) {
        same(
          cancels,
          [{ type: 'cancelActive', runId: active.runId, reason: active.started ? 'interrupted' : 'superseded' }],
          where,
        );
      } else {
        same(cancels, [], `${where}: an interrupt cancels only a started run (or an interrupt not yet started)`);
      }
    } else {
      switch (event.type) {
        case 'ADMIT_NEXT':
          if (out.length > 0) {
            // A collect front takes the collect messages right behind it along.
            const batch = [lane[0]!];
            while (collecting.has(lane[0]!) && batch.length < lane.length && collecting.has(lane[batch.length]!))
              batch.push(lane[batch.length]!);
            same(
              out,
              [
                {
                  type: 'admit',
                  runId: lane[0],
                  ...(batch.length > 1 ? { carries: batch.slice(1) } : {}),
                  ...(rolledBackBy.has(lane[0]!) ? { rollsBack: rolledBackBy.get(lane[0]!) } : {}),
                },
              ],
              where,
            );
            const front = s.actor.getSnapshot().context.active!;
            for (const runId of batch) leave(runId, 'admitted');
            admit(front.runId);
            active!.viaInterrupt = front.viaInterrupt;
          } else {
            holds(active !== undefined || lane.length === 0, `${where}: an idle session with a lane admits`);
          }
          break;
        case 'RUN_STARTED':
          same(out, [], where);
          if (active?.runId === event.runId) active.started = true;
          break;
        case 'STEERS_CONSUMED':
          same(out, [], where);
          break;
        case 'RUN_ENDED':
          holds(active?.runId === event.runId, `${where}: only the active run ends`);
          active = undefined;
          same(out, [{ type: 'idle', laneDepth: lane.length }], where);
          break;
        case 'CANCEL_QUEUED':
        case 'LANE_EXPIRED': {
          const reason = event.type === 'LANE_EXPIRED' ? 'lane_timeout' : event.reason;
          same(out, [{ type: 'dropped', runId: event.runId, reason }], where);
          leave(event.runId, reason);
          break;
        }
        case 'WITHDRAW':
        case 'MOVE':
        case 'PROMOTE':
        case 'EDIT': {
          if (!lane.includes(event.runId)) {
            holds(
              out.length === 1 && out[0]!.type === 'laneRefused' && out[0]!.code === 'not_waiting',
              `${where}: an operation on a message not waiting is refused not_waiting`,
            );
            same(after.context, before.context, `${where}: a refused operation changes nothing`);
            break;
          }
          if (event.type === 'WITHDRAW') {
            leave(event.runId, 'withdrawn');
            same(
              out,
              [
                { type: 'laneChanged', runId: event.runId, change: 'withdrawn', lane },
                { type: 'dropped', runId: event.runId, reason: 'withdrawn' },
              ],
              where,
            );
          } else if (event.type === 'MOVE') {
            // A rollback at the front keeps its place; everything else keeps its order.
            const pinned = rollbacks.has(lane[0]!) && lane[0] !== event.runId ? 1 : 0;
            if (!(rollbacks.has(lane[0]!) && lane[0] === event.runId)) {
              const rest = lane.filter((id) => id !== event.runId);
              const at = Math.min(Math.max(event.position - 1, pinned), rest.length);
              lane = [...rest.slice(0, at), event.runId, ...rest.slice(at)];
            }
            same(out, [{ type: 'laneChanged', runId: event.runId, change: 'moved', lane }], where);
          } else if (event.type === 'PROMOTE') {
            const steerable =
              active !== undefined &&
              plain.has(event.runId) &&
              !interrupts.has(event.runId) &&
              !rollbacks.has(event.runId) &&
              before.context.active!.pendingSteers < limits.maxPendingSteers;
            if (!steerable) {
              holds(
                out.length === 1 && out[0]!.type === 'laneRefused' && out[0]!.code === 'not_steerable',
                `${where}: a message that cannot steer is refused not_steerable`,
              );
              same(after.context, before.context, `${where}: a refused promote changes nothing`);
            } else {
              leave(event.runId, 'promoted');
              same(
                out,
                [
                  { type: 'laneChanged', runId: event.runId, change: 'promoted', lane, intoRunId: active!.runId },
                  { type: 'steer', runId: event.runId, intoRunId: active!.runId },
                ],
                where,
              );
            }
          } else {
            same(out, [{ type: 'laneChanged', runId: event.runId, change: 'edited', lane }], where);
            same(after.context, before.context, `${where}: an edit changes only the text, which the engine keeps`);
          }
          break;
        }
        case 'PURGE': {
          const purged = [...lane];
          for (const runId of purged) leave(runId, 'purged');
          same(
            out,
            [
              ...purged.map((runId) => ({ type: 'dropped', runId, reason: 'purged' })),
              ...(active ? [{ type: 'cancelActive', runId: active.runId, reason: 'stopped' }] : []),
            ],
            where,
          );
          break;
        }
        default:
          throw new Error(`event ${event.type} is not in the model's alphabet`);
      }
    }

    const { context } = after;
    holds(context.active?.runId === active?.runId, `${where}: at most one active run, the one admitted last`);
    holds(after.value === (active ? 'busy' : 'idle'), `${where}: busy exactly while a run holds the slot`);
    same(
      context.lane.map((entry) => entry.runId),
      lane,
      `${where}: FIFO lane`,
    );
    holds(context.lane.length <= context.laneCapacity, `${where}: lane within capacity`);
    holds(
      (context.active?.pendingSteers ?? 0) <= context.maxPendingSteers,
      `${where}: pending steers within the limit`,
    );
  });

  // Whatever is still waiting expires once, and nothing that already left the lane does.
  const waiting = [...lane];
  const mark = s.emitted.length;
  s.clock.increment(limits.laneMaxWaitMs);
  // In arrival order, which a rollback (it waits at the front) breaks: compared as a set.
  const byRunId = (a: { runId: string }, b: { runId: string }) => a.runId.localeCompare(b.runId);
  same(
    [...s.emitted.slice(mark)].sort(byRunId as never),
    waiting.map((runId) => ({ type: 'dropped', runId, reason: 'lane_timeout' })).sort(byRunId),
    'expiry after the path',
  );
  same(s.context().lane, [], 'expiry after the path');
  return { firstDecision, leftLane };
}

describe('session machine, model-based (xstate/graph)', () => {
  it('explores a bounded state space that covers busy/idle, full lanes, steers and interrupts', () => {
    expect(statePaths.length).toBeGreaterThan(100);
    expect(Math.max(...statePaths.map((path) => path.steps.length))).toBeLessThan(20);
    const contexts: SessionContext[] = statePaths.map((path) => path.state.context);
    expect(contexts.some((c) => c.lane.length === limits.laneCapacity && c.active?.running)).toBe(true);
    expect(contexts.some((c) => c.active?.pendingSteers === limits.maxPendingSteers)).toBe(true);
    expect(contexts.some((c) => c.active?.viaInterrupt && c.lane.some((entry) => entry.viaInterrupt))).toBe(true);
    expect(contexts.some((c) => !c.active && c.lane.length > 0)).toBe(true);
  });

  const byLastEvent = new Map<string, SessionEvent[][]>();
  for (const path of transitionPaths) {
    const key = label(path.events.at(-1)!);
    byLastEvent.set(key, [...(byLastEvent.get(key) ?? []), path.events]);
  }

  it.each([...byLastEvent].map(([key, paths]) => [key, paths.length, paths] as const))(
    'every reachable state, then %s (%i paths): one active run, one first decision each, lane leaves once, capacity, rejects change nothing',
    (_key, _count, paths) => {
      for (const events of paths) replay(events);
    },
  );
});

// ---------------------------------------------------------------------------------------------
// Explicit rules.

describe('steer or queue (docs/runs.md, busy sessions: steer)', () => {
  /** The active run was admitted from `activeMessage` and has started; `candidate` arrives. */
  const rows: {
    case: string;
    activeMessage?: Partial<SessionMessage>;
    steersBefore?: number;
    consumed?: number;
    candidate: Partial<SessionMessage> & { policy?: BusyPolicy };
    decision: 'steer' | 'queued';
  }[] = [
    { case: 'plain text', candidate: {}, decision: 'steer' },
    {
      case: 'attachments or a timeout/iteration/sandbox override',
      candidate: { plainText: false },
      decision: 'queued',
    },
    {
      case: 'model override equal to the active run’s',
      activeMessage: { model: 'local:big', runModel: 'local:big' },
      candidate: { model: 'local:big' },
      decision: 'steer',
    },
    {
      case: 'model override equal to the model the active run uses by default',
      activeMessage: { runModel: 'scripted' },
      candidate: { model: 'scripted' },
      decision: 'steer',
    },
    {
      case: 'model override different from the active run’s',
      activeMessage: { model: 'local:big', runModel: 'local:big' },
      candidate: { model: 'local:small' },
      decision: 'queued',
    },
    {
      case: 'model override while the active run uses the default',
      activeMessage: { runModel: 'scripted' },
      candidate: { model: 'local:small' },
      decision: 'queued',
    },
    {
      case: 'no model override into a run with one',
      activeMessage: { model: 'local:big', runModel: 'local:big' },
      candidate: {},
      decision: 'steer',
    },
    {
      case: 'workspace override equal',
      activeMessage: { workspace: '/w/a', runWorkspace: '/w/a' },
      candidate: { workspace: '/w/a' },
      decision: 'steer',
    },
    {
      case: 'workspace override equal to the default workspace of the active run',
      activeMessage: { runWorkspace: '/w/default' },
      candidate: { workspace: '/w/default' },
      decision: 'steer',
    },
    {
      case: 'workspace override different',
      activeMessage: { workspace: '/w/a', runWorkspace: '/w/a' },
      candidate: { workspace: '/w/b' },
      decision: 'queued',
    },
    { case: 'max pending steers reached', steersBefore: 2, candidate: {}, decision: 'queued' },
    {
      case: 'room again after the run consumed steers',
      steersBefore: 2,
      consumed: 2,
      candidate: {},
      decision: 'steer',
    },
    { case: 'expectedRunId is the active run', candidate: { expectedRunId: 'active' }, decision: 'steer' },
    { case: 'expectedRunId is another run', candidate: { expectedRunId: 'previous' }, decision: 'queued' },
    { case: 'busy policy queue', candidate: { policy: 'queue' }, decision: 'queued' },
  ];

  it.each(rows)('$case → $decision', ({ activeMessage, steersBefore = 0, consumed = 0, candidate, decision }) => {
    const s = session({ ...input, maxPendingSteers: 2, laneCapacity: 4 });
    expect(s.send(submit('active', 'queue', activeMessage))).toEqual([{ type: 'admit', runId: 'active' }]);
    s.send({ type: 'RUN_STARTED', runId: 'active' });
    for (let i = 0; i < steersBefore; i += 1) expect(s.send(submit(`steer-${i}`, 'steer'))[0]?.type).toBe('steer');
    if (consumed > 0) s.send({ type: 'STEERS_CONSUMED', runId: 'active', count: consumed });
    const out = s.send(submit('candidate', candidate.policy ?? 'steer', candidate));
    expect(out[0]).toMatchObject(
      decision === 'steer' ? { type: 'steer', intoRunId: 'active' } : { type: 'queued', position: 1 },
    );
    expect(s.context().active?.pendingSteers).toBe(steersBefore - consumed + (decision === 'steer' ? 1 : 0));
  });

  it('a steer into a run still waiting for permits is accepted: the run consumes it at its first turn', () => {
    const s = session();
    s.send(submit('active', 'queue'));
    expect(s.send(submit('early', 'steer'))).toEqual([{ type: 'steer', runId: 'early', intoRunId: 'active' }]);
  });

  it('a steer message for an idle session simply starts a run', () => {
    const s = session();
    expect(s.send(submit('first', 'steer'))).toEqual([{ type: 'admit', runId: 'first' }]);
  });

  it('canSteer is the same rule as a pure function', () => {
    const context: SessionContext = { ...input, active: undefined, lane: [], overflowDropped: [], collectQuiet: false };
    expect(canSteer(context, { runId: 'x', policy: 'steer', plainText: true })).toBe(false);
    const active = { runId: 'a', running: true, viaInterrupt: false, pendingSteers: 0 };
    expect(canSteer({ ...context, active }, { runId: 'x', policy: 'steer', plainText: true })).toBe(true);
    expect(
      canSteer(
        { ...context, active: { ...active, pendingSteers: 1 } },
        { runId: 'x', policy: 'steer', plainText: true },
      ),
    ).toBe(false);
  });
});

describe('interrupt (docs/runs.md, busy sessions: interrupt)', () => {
  it('cancels the active run once it has started, and waits in the lane', () => {
    const s = session();
    s.send(submit('a', 'queue'));
    s.send({ type: 'RUN_STARTED', runId: 'a' });
    expect(s.send(submit('i1', 'interrupt'))).toEqual([
      { type: 'queued', runId: 'i1', position: 1 },
      { type: 'cancelActive', runId: 'a', reason: 'interrupted' },
    ]);
    expect(s.send({ type: 'RUN_ENDED', runId: 'a' })).toEqual([{ type: 'idle', laneDepth: 1 }]);
    expect(s.send({ type: 'ADMIT_NEXT' })).toEqual([{ type: 'admit', runId: 'i1' }]);
  });

  it('does not cancel an active run that has not started (it was admitted but waits for permits)', () => {
    const s = session();
    s.send(submit('a', 'queue'));
    expect(s.send(submit('i1', 'interrupt'))).toEqual([{ type: 'queued', runId: 'i1', position: 1 }]);
  });

  it('a burst of interrupts: each supersedes the earlier waiting interrupt, and only the started run is cancelled', () => {
    const s = session({ ...input, laneCapacity: 4 });
    s.send(submit('a', 'queue'));
    s.send({ type: 'RUN_STARTED', runId: 'a' });
    s.send(submit('q', 'queue'));
    s.send(submit('i1', 'interrupt'));
    const out = s.send(submit('i2', 'interrupt'));
    expect(out.filter((e) => e.type !== 'cancelActive')).toEqual([
      { type: 'dropped', runId: 'i1', reason: 'superseded' },
      { type: 'queued', runId: 'i2', position: 2 },
    ]);
    expect(out.filter((e) => e.type === 'cancelActive').every((e) => e.runId === 'a')).toBe(true);
    expect(s.context().lane.map((e) => e.runId)).toEqual(['q', 'i2']);
  });

  it('an interrupt admitted but not yet started is superseded by the next interrupt', () => {
    const s = session();
    s.send(submit('i1', 'interrupt'));
    expect(s.send(submit('i2', 'interrupt'))).toEqual([
      { type: 'queued', runId: 'i2', position: 1 },
      { type: 'cancelActive', runId: 'i1', reason: 'superseded' },
    ]);
  });

  it('superseding makes room: an interrupt into a full lane replaces the waiting interrupt', () => {
    const s = session();
    s.send(submit('a', 'queue'));
    s.send(submit('q', 'queue'));
    s.send(submit('i1', 'interrupt'));
    expect(s.send(submit('i2', 'interrupt'))).toEqual([
      { type: 'dropped', runId: 'i1', reason: 'superseded' },
      { type: 'queued', runId: 'i2', position: 2 },
    ]);
  });

  it('an interrupt rejected for a full lane cancels nothing', () => {
    const s = session();
    s.send(submit('a', 'queue'));
    s.send({ type: 'RUN_STARTED', runId: 'a' });
    s.send(submit('q1', 'queue'));
    s.send(submit('q2', 'queue'));
    const before = s.context();
    expect(s.send(submit('i', 'interrupt'))).toEqual([{ type: 'rejected', runId: 'i', code: 'lane_full' }]);
    expect(s.context()).toEqual(before);
  });
});

describe('the wait lane (docs/runs.md, the wait lane)', () => {
  it('lane_full rejects the newest message and keeps what is queued', () => {
    const s = session();
    s.send(submit('a', 'queue'));
    s.send(submit('q1', 'queue'));
    s.send(submit('q2', 'queue'));
    const before = s.actor.getSnapshot();
    expect(s.send(submit('q3', 'queue'))).toEqual([{ type: 'rejected', runId: 'q3', code: 'lane_full' }]);
    expect(s.actor.getSnapshot().context).toEqual(before.context);
    expect(s.context().lane.map((e) => e.runId)).toEqual(['q1', 'q2']);
  });

  it('only the front is admitted, and it leaves the lane when admitted', () => {
    const s = session();
    s.send(submit('a', 'queue'));
    s.send(submit('q1', 'queue'));
    s.send(submit('q2', 'queue'));
    expect(s.send({ type: 'ADMIT_NEXT' })).toEqual([]);
    s.send({ type: 'RUN_ENDED', runId: 'a' });
    expect(s.send({ type: 'ADMIT_NEXT' })).toEqual([{ type: 'admit', runId: 'q1' }]);
    expect(s.context().lane.map((e) => e.runId)).toEqual(['q2']);
  });

  it('a message waits at most laneMaxWaitMs, counted from its own arrival, then is dropped lane_timeout', () => {
    const s = session();
    s.send(submit('a', 'queue'));
    s.send(submit('q1', 'queue'));
    s.clock.increment(limits.laneMaxWaitMs / 2);
    s.send(submit('q2', 'queue'));
    const mark = s.emitted.length;
    s.clock.increment(limits.laneMaxWaitMs / 2 - 1);
    expect(s.emitted.slice(mark)).toEqual([]);
    s.clock.increment(1);
    expect(s.emitted.slice(mark)).toEqual([{ type: 'dropped', runId: 'q1', reason: 'lane_timeout' }]);
    s.clock.increment(limits.laneMaxWaitMs / 2);
    expect(s.emitted.slice(mark)).toEqual([
      { type: 'dropped', runId: 'q1', reason: 'lane_timeout' },
      { type: 'dropped', runId: 'q2', reason: 'lane_timeout' },
    ]);
    expect(s.received.filter((type) => type === 'LANE_EXPIRED')).toHaveLength(2);
    expect(s.context().lane).toEqual([]);
  });

  it('an admitted, cancelled or purged message never expires afterwards', () => {
    const s = session({ ...input, laneCapacity: 4 });
    s.send(submit('a', 'queue'));
    s.send(submit('admitted', 'queue'));
    s.send(submit('cancelled', 'queue'));
    s.send({ type: 'CANCEL_QUEUED', runId: 'cancelled', reason: 'user' });
    s.send({ type: 'RUN_ENDED', runId: 'a' });
    s.send({ type: 'ADMIT_NEXT' });
    s.send(submit('purged', 'queue'));
    s.send({ type: 'PURGE' });
    const mark = s.emitted.length;
    s.clock.increment(limits.laneMaxWaitMs * 2);
    expect(s.emitted.slice(mark)).toEqual([]);
    expect(
      s.received.filter((type) => type === 'LANE_EXPIRED'),
      'their timers were cancelled, not merely ignored',
    ).toEqual([]);
  });

  it('cancel of a queued message drops it; of an unknown or the active run it does nothing', () => {
    const s = session();
    s.send(submit('a', 'queue'));
    s.send(submit('q', 'queue'));
    expect(s.send({ type: 'CANCEL_QUEUED', runId: 'a', reason: 'user' })).toEqual([]);
    expect(s.send({ type: 'CANCEL_QUEUED', runId: 'nope', reason: 'user' })).toEqual([]);
    expect(s.send({ type: 'CANCEL_QUEUED', runId: 'q', reason: 'user' })).toEqual([
      { type: 'dropped', runId: 'q', reason: 'user' },
    ]);
    expect(s.send({ type: 'CANCEL_QUEUED', runId: 'q', reason: 'user' })).toEqual([]);
  });

  it('RUN_ENDED of a run that is not the active one changes nothing', () => {
    const s = session();
    s.send(submit('a', 'queue'));
    expect(s.send({ type: 'RUN_ENDED', runId: 'b' })).toEqual([]);
    expect(s.actor.getSnapshot().value).toBe('busy');
  });

  it('purge drops every queued message and cancels the active run; the slot frees on RUN_ENDED', () => {
    const s = session();
    s.send(submit('a', 'queue'));
    s.send(submit('q1', 'queue'));
    s.send(submit('q2', 'interrupt'));
    expect(s.send({ type: 'PURGE' })).toEqual([
      { type: 'dropped', runId: 'q1', reason: 'purged' },
      { type: 'dropped', runId: 'q2', reason: 'purged' },
      { type: 'cancelActive', runId: 'a', reason: 'stopped' },
    ]);
    expect(s.context().lane).toEqual([]);
    expect(s.actor.getSnapshot().value).toBe('busy');
    expect(s.send({ type: 'RUN_ENDED', runId: 'a' })).toEqual([{ type: 'idle', laneDepth: 0 }]);
  });

  it('requeue at the front may exceed capacity by design, and an idle session announces it', () => {
    const s = session();
    s.send(submit('a', 'queue'));
    s.send(submit('q1', 'queue'));
    s.send(submit('q2', 'queue'));
    expect(s.send({ type: 'REQUEUE_FRONT', entry: { runId: 'steers', viaInterrupt: false } })).toEqual([
      { type: 'queued', runId: 'steers', position: 1 },
    ]);
    expect(s.context().lane.map((e) => e.runId)).toEqual(['steers', 'q1', 'q2']);
    s.send({ type: 'RUN_ENDED', runId: 'a' });
    expect(s.send({ type: 'REQUEUE_FRONT', entry: { runId: 'more', viaInterrupt: false } })).toEqual([
      { type: 'queued', runId: 'more', position: 1 },
      { type: 'idle', laneDepth: 4 },
    ]);
    expect(s.send({ type: 'ADMIT_NEXT' })).toEqual([{ type: 'admit', runId: 'more' }]);
  });
});

describe('CONFIGURE changes the limits for later decisions', () => {
  it('a larger lane, more pending steers and a new max wait apply at once', () => {
    const s = session();
    s.send(submit('a', 'queue'));
    s.send(submit('q1', 'queue'));
    s.send(submit('s1', 'steer'));
    s.send(submit('q2', 'queue'));
    expect(s.send(submit('q3', 'queue'))[0]?.type).toBe('rejected');
    expect(s.send(submit('s2', 'steer'))[0]?.type).toBe('rejected');
    s.send({ type: 'CONFIGURE', limits: { laneCapacity: 4, maxPendingSteers: 2, laneMaxWaitMs: 1_000 } });
    expect(s.context()).toMatchObject({ laneCapacity: 4, maxPendingSteers: 2, laneMaxWaitMs: 1_000 });
    expect(s.send(submit('s3', 'steer'))).toEqual([{ type: 'steer', runId: 's3', intoRunId: 'a' }]);
    expect(s.send(submit('q3', 'queue'))).toEqual([{ type: 'queued', runId: 'q3', position: 3 }]);
    const mark = s.emitted.length;
    s.clock.increment(1_000);
    expect(s.emitted.slice(mark)).toEqual([{ type: 'dropped', runId: 'q3', reason: 'lane_timeout' }]);
  });

  it('a smaller lane drops nothing already queued but rejects newcomers', () => {
    const s = session();
    s.send(submit('a', 'queue'));
    s.send(submit('q1', 'queue'));
    s.send(submit('q2', 'queue'));
    s.send({ type: 'CONFIGURE', limits: { ...limits, laneCapacity: 1 } });
    expect(s.context().lane.map((e) => e.runId)).toEqual(['q1', 'q2']);
    expect(s.send(submit('q3', 'queue'))).toEqual([{ type: 'rejected', runId: 'q3', code: 'lane_full' }]);
  });
});

type Session = ReturnType<typeof session>;

describe('reject (docs/runs.md, busy sessions: reject)', () => {
  it.each<[string, (s: Session) => void, { activeRunId?: string }]>([
    ['a run is active', (s) => void s.send(submit('a', 'queue')), { activeRunId: 'a' }],
    [
      'messages wait, none active',
      (s) => {
        s.send(submit('a', 'queue'));
        s.send(submit('q', 'queue'));
        s.send({ type: 'RUN_ENDED', runId: 'a' });
      },
      {},
    ],
  ])('refuses session_busy when %s, and changes nothing', (_case, setUp, details) => {
    const s = session();
    setUp(s);
    const before = s.actor.getSnapshot();
    expect(s.send(submit('r', 'reject'))).toEqual([{ type: 'rejected', runId: 'r', code: 'session_busy', ...details }]);
    expect(s.actor.getSnapshot().context).toEqual(before.context);
    expect(s.actor.getSnapshot().value).toEqual(before.value);
  });

  it('starts at once in an idle session', () => {
    expect(session().send(submit('r', 'reject'))).toEqual([{ type: 'admit', runId: 'r' }]);
  });
});

describe('rollback (docs/runs.md, busy sessions: rollback)', () => {
  it('cancels the active run rolled_back, started or not, and waits at the front of the lane', () => {
    const s = session({ ...input, laneCapacity: 4 });
    s.send(submit('a', 'queue'));
    s.send(submit('q', 'queue'));
    expect(s.send(submit('rb', 'rollback'))).toEqual([
      { type: 'queued', runId: 'rb', position: 1 },
      { type: 'cancelActive', runId: 'a', reason: 'rolled_back', by: 'rb' },
    ]);
    expect(s.context().lane.map((e) => e.runId)).toEqual(['rb', 'q']);
  });

  it('steers the rolled-back run hands back go behind the rollback message', () => {
    const s = session({ ...input, laneCapacity: 4 });
    s.send(submit('a', 'queue'));
    s.send(submit('rb', 'rollback'));
    expect(s.send({ type: 'REQUEUE_FRONT', entry: { runId: 'steers', viaInterrupt: false } })).toEqual([
      { type: 'queued', runId: 'steers', position: 2 },
    ]);
    s.send({ type: 'RUN_ENDED', runId: 'a' });
    expect(s.send({ type: 'ADMIT_NEXT' })).toEqual([{ type: 'admit', runId: 'rb', rollsBack: 'a' }]);
  });

  it('a rollback supersedes a rollback still waiting, in the lane or admitted and not yet running', () => {
    const s = session();
    s.send(submit('a', 'queue'));
    s.send(submit('rb1', 'rollback'));
    expect(s.send(submit('rb2', 'rollback'))).toEqual([
      { type: 'dropped', runId: 'rb1', reason: 'superseded' },
      { type: 'queued', runId: 'rb2', position: 1 },
      { type: 'cancelActive', runId: 'a', reason: 'rolled_back', by: 'rb2' },
    ]);
    s.send({ type: 'RUN_ENDED', runId: 'a' });
    s.send({ type: 'ADMIT_NEXT' });
    expect(s.send(submit('rb3', 'rollback'))).toEqual([
      { type: 'queued', runId: 'rb3', position: 1 },
      { type: 'cancelActive', runId: 'rb2', reason: 'superseded' },
    ]);
  });

  it('into a full lane with reject_newest it is refused and cancels nothing', () => {
    const s = session();
    s.send(submit('a', 'queue'));
    s.send(submit('q1', 'queue'));
    s.send(submit('q2', 'queue'));
    expect(s.send(submit('rb', 'rollback'))).toEqual([{ type: 'rejected', runId: 'rb', code: 'lane_full' }]);
  });
});

describe('lane overflow (docs/runs.md, the wait lane)', () => {
  const rows = [
    {
      rule: 'reject_newest',
      out: [{ type: 'rejected', runId: 'q3', code: 'lane_full' }],
      lane: ['q1', 'q2'],
      first: { type: 'admit', runId: 'q1' },
    },
    {
      rule: 'drop_oldest',
      out: [
        { type: 'dropped', runId: 'q1', reason: 'dropped_overflow' },
        { type: 'queued', runId: 'q3', position: 2 },
      ],
      lane: ['q2', 'q3'],
      first: { type: 'admit', runId: 'q2' },
    },
    {
      rule: 'summarize_oldest',
      out: [
        { type: 'dropped', runId: 'q1', reason: 'dropped_overflow' },
        { type: 'queued', runId: 'q3', position: 2 },
      ],
      lane: ['q2', 'q3'],
      first: { type: 'admit', runId: 'q2', summarizes: ['q1'] },
    },
  ] as const;
  it.each(rows)('$rule', ({ rule, out, lane, first }) => {
    const s = session({ ...input, laneOverflow: rule });
    s.send(submit('a', 'queue'));
    s.send(submit('q1', 'queue'));
    s.send(submit('q2', 'queue'));
    expect(s.send(submit('q3', 'queue'))).toEqual(out);
    expect(s.context().lane.map((e) => e.runId)).toEqual(lane);
    s.send({ type: 'RUN_ENDED', runId: 'a' });
    expect(s.send({ type: 'ADMIT_NEXT' })).toEqual([first]);
    s.send({ type: 'RUN_ENDED', runId: first.runId });
    expect(s.send({ type: 'ADMIT_NEXT' }), 'the notice goes to one run only').toEqual([
      { type: 'admit', runId: lane[1] },
    ]);
  });

  it('a dropped message never expires afterwards', () => {
    const s = session({ ...input, laneOverflow: 'drop_oldest' });
    s.send(submit('a', 'queue'));
    s.send(submit('q1', 'queue'));
    s.send(submit('q2', 'queue'));
    s.send(submit('q3', 'queue'));
    s.clock.increment(limits.laneMaxWaitMs);
    expect(s.received.filter((t) => t === 'LANE_EXPIRED')).toHaveLength(2);
  });
});

describe('collect (docs/runs.md, busy sessions: collect)', () => {
  const collectInput = { ...input, laneCapacity: 8, collectQuietMs: 500, collectMax: 3 };
  const collect = (runId: string, key = 'k') => submit(runId, 'collect', { collectKey: key });

  it('waits for the quiet window, then admits the front run of equal keys as one, up to collectMax', () => {
    const s = session(collectInput);
    s.send(submit('a', 'queue'));
    for (const id of ['c1', 'c2']) s.send(collect(id));
    s.send(collect('x', 'other'));
    s.send({ type: 'RUN_ENDED', runId: 'a' });
    expect(s.send({ type: 'ADMIT_NEXT' }), 'the window is open').toEqual([]);
    s.clock.increment(499);
    expect(s.actor.getSnapshot().value).toBe('idle');
    const mark = s.emitted.length;
    s.clock.increment(1);
    expect(s.emitted.slice(mark)).toEqual([{ type: 'idle', laneDepth: 3 }]);
    expect(s.send({ type: 'ADMIT_NEXT' })).toEqual([{ type: 'admit', runId: 'c1', carries: ['c2'] }]);
    expect(s.context().lane.map((e) => e.runId)).toEqual(['x']);
  });

  it('a message arriving in the window joins and restarts it; collectMax caps the batch', () => {
    const s = session(collectInput);
    s.send(submit('a', 'queue'));
    s.send(collect('c1'));
    s.send({ type: 'RUN_ENDED', runId: 'a' });
    s.clock.increment(400);
    s.send(collect('c2'));
    s.send(collect('c3'));
    s.send(collect('c4'));
    s.clock.increment(400);
    expect(s.send({ type: 'ADMIT_NEXT' })).toEqual([]);
    s.clock.increment(100);
    expect(s.send({ type: 'ADMIT_NEXT' })).toEqual([{ type: 'admit', runId: 'c1', carries: ['c2', 'c3'] }]);
    expect(s.context().lane.map((e) => e.runId)).toEqual(['c4']);
  });

  it('a message without a key (not mergeable) and queue messages never merge', () => {
    const s = session({ ...collectInput, collectQuietMs: 0 });
    s.send(submit('a', 'queue'));
    s.send(submit('c1', 'collect'));
    s.send(collect('c2'));
    s.send(submit('q', 'queue'));
    s.send(collect('c3'));
    s.send({ type: 'RUN_ENDED', runId: 'a' });
    expect(s.send({ type: 'ADMIT_NEXT' })).toEqual([{ type: 'admit', runId: 'c1' }]);
    s.send({ type: 'RUN_ENDED', runId: 'c1' });
    expect(s.send({ type: 'ADMIT_NEXT' })).toEqual([{ type: 'admit', runId: 'c2' }]);
  });

  it('merged messages leave the lane with their timers', () => {
    const s = session({ ...collectInput, collectQuietMs: 0 });
    s.send(submit('a', 'queue'));
    s.send(collect('c1'));
    s.send(collect('c2'));
    s.send({ type: 'RUN_ENDED', runId: 'a' });
    s.send({ type: 'ADMIT_NEXT' });
    s.clock.increment(limits.laneMaxWaitMs * 2);
    expect(s.received.filter((t) => t === 'LANE_EXPIRED')).toEqual([]);
  });
});
