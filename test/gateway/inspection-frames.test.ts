/*
 * The inspection stream sends each actor's context whole once and then what changed: a
 * reader that folds the frames (as the inspector page does) must hold, after every snapshot,
 * exactly the whole context of that moment — on a real engine running tool batches, and for
 * a reader that subscribes mid-run through the gateway's fan-out.
 */
import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import { assign, createActor, setup, type InspectionEvent } from 'xstate';
import type { Engine } from '../../src/engine/index.js';
import { InspectFanout } from '../../src/gateway/inspection/inspect-fanout.js';
import type { SerializedInspectionEvent } from '../../src/gateway/inspection/inspect-serialize.js';
import { InspectionFrames } from '../../src/gateway/inspection/inspection-frames.js';
import { scriptedModel } from '../../src/model/index.js';
import { engineFixture, heldModel, look } from '../engine/fixtures.js';
import { until } from '../support/eventually.js';

const engineOf = engineFixture();

function toolBatchEngine(): Promise<Engine> {
  return engineOf({
    tools: [look],
    models: {
      scripted: scriptedModel([{ toolCalls: [0, 1, 2].map((n) => ({ name: 'look', args: { n } })) }, { text: 'ok' }]),
    },
    config: { execution: { busy_policy: 'queue', wait_lane_capacity: 50 } },
  });
}

type Context = Record<string, unknown>;

/** What a reader holds: each actor's context, folded from the frames as docs/inspector.md says. */
class Reader {
  readonly contexts = new Map<string, Context>();

  read(frame: SerializedInspectionEvent): Context | undefined {
    const snapshot = frame.snapshot;
    if (!snapshot || frame.type === '@xstate.microstep') return undefined;
    let context = this.contexts.get(frame.actorId);
    if (snapshot.context) context = snapshot.context;
    else if (snapshot.contextChanges || snapshot.contextRemoved) {
      context = { ...context, ...snapshot.contextChanges };
      for (const key of snapshot.contextRemoved ?? []) delete context[key];
    }
    if (context) this.contexts.set(frame.actorId, context);
    return context;
  }
}

function withoutContext(frame: SerializedInspectionEvent): SerializedInspectionEvent {
  if (!frame.snapshot) return frame;
  const { context: _c, contextChanges: _ch, contextRemoved: _r, ...snapshot } = frame.snapshot;
  return { ...frame, snapshot };
}

async function runBatches(engine: Engine, runs: number): Promise<void> {
  const ids: string[] = [];
  for (let i = 0; i < runs; i++) {
    ids.push((await engine.submit({ sessionId: `s${i % 3}`, input: `m${i}` })).runId);
  }
  for (const id of ids) await engine.wait(id);
}

describe('inspection frames', () => {
  it('a reader folding the stream holds every actor’s whole context after each snapshot, and the rest of each frame is as a whole one', async () => {
    const engine = await toolBatchEngine();
    const stream = new InspectionFrames();
    const reader = new Reader();
    let frames = 0;
    let deltas = 0;
    let streamChars = 0;
    let wholeChars = 0;
    const mismatches: string[] = [];
    const stop = engine.inspect((event: InspectionEvent) => {
      const text = stream.frame(event, 1);
      // A stream of its own that has seen nothing: every context in it is whole.
      const wholeText = new InspectionFrames().frame(event, 1);
      const frame = JSON.parse(text) as SerializedInspectionEvent;
      const whole = JSON.parse(wholeText) as SerializedInspectionEvent;
      frames += 1;
      if (event.type === '@xstate.snapshot' && frame.machineId) {
        streamChars += text.length;
        wholeChars += wholeText.length;
      }
      if (frame.snapshot?.contextChanges && !frame.snapshot.context) deltas += 1;
      expect(withoutContext(frame)).toEqual(withoutContext(whole));
      const held = reader.read(frame);
      if (
        whole.snapshot?.context &&
        event.type !== '@xstate.microstep' &&
        !isDeepStrictEqual(held, whole.snapshot.context)
      ) {
        mismatches.push(`${frame.actorId} after ${frame.event?.type}`);
      }
    });
    await runBatches(engine, 12);
    stop();
    expect(mismatches).toEqual([]);
    expect(frames).toBeGreaterThan(12 * 100);
    expect(deltas).toBeGreaterThan(12 * 5);
    // Deltas are what make the stream cheaper than whole snapshots: the machines' snapshots are smaller too.
    expect(streamChars).toBeLessThan(wholeChars * 0.8);
  });

  it('a subscriber that arrives mid-run starts from whole snapshots and folds to the actors as they are', async () => {
    const engine = await toolBatchEngine();
    const fanout = new InspectFanout(engine, (error) => {
      throw error;
    });
    const early = new Reader();
    const late = new Reader();
    const stopEarly = fanout.subscribe((text) => early.read(JSON.parse(text) as SerializedInspectionEvent));
    let stopLate = () => {};
    let compared = 0;
    /** Both readers hold every live actor's context as the actor has it now. */
    const compare = () => {
      const now = new Reader();
      for (const text of fanout.current()) now.read(JSON.parse(text) as SerializedInspectionEvent);
      for (const [actorId, context] of now.contexts) {
        expect(early.contexts.get(actorId), actorId).toEqual(context);
        expect(late.contexts.get(actorId), actorId).toEqual(context);
        compared += 1;
      }
    };
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) {
      if (i === 4) {
        // As a connection does it: subscribe, then the current actors, then the live frames.
        let started = false;
        stopLate = fanout.subscribe((text) => {
          if (started) late.read(JSON.parse(text) as SerializedInspectionEvent);
        });
        for (const text of fanout.current()) late.read(JSON.parse(text) as SerializedInspectionEvent);
        started = true;
      }
      if (i >= 8) compare();
      ids.push((await engine.submit({ sessionId: `s${i % 3}`, input: `m${i}` })).runId);
    }
    for (const id of ids) await engine.wait(id);
    compare();
    // The limiter, three sessions and the runs alive at each look.
    expect(compared).toBeGreaterThan(4 * 4);
    stopLate();
    stopEarly();
  });

  it('carries a running model turn as a child of its run, in the current actors too, until it is done', async () => {
    const model = heldModel();
    const engine = await engineOf({ models: { scripted: model.provider } });
    const fanout = new InspectFanout(engine, (error) => {
      throw error;
    });
    const frames: SerializedInspectionEvent[] = [];
    const stop = fanout.subscribe((text) => frames.push(JSON.parse(text) as SerializedInspectionEvent));
    const { runId } = await engine.submit({ sessionId: 's', input: 'hello' });
    await until(() => model.isThinking(runId), 'the model is thinking');

    const run = `run:${runId}`;
    const turn = `${run}/turn:0`;
    const ofTurn = () => frames.filter((frame) => frame.actorId === turn);
    expect(ofTurn().map((frame) => [frame.type, frame.snapshot?.status])).toEqual([
      ['@xstate.actor', undefined],
      ['@xstate.snapshot', 'active'],
      ['@xstate.transition', 'active'],
    ]);
    for (const frame of ofTurn()) {
      expect(frame).toMatchObject({ rootId: run, parentId: run });
      expect(frame.machineId).toBeUndefined();
    }
    const current = fanout.current().map((text) => JSON.parse(text) as SerializedInspectionEvent);
    expect(current.filter((frame) => frame.actorId === turn)).toMatchObject([
      { type: '@xstate.snapshot', parentId: run, snapshot: { status: 'active' } },
    ]);

    model.answer(runId);
    await engine.wait(runId);
    expect(ofTurn().at(-1)).toMatchObject({
      type: '@xstate.transition',
      event: { type: 'xstate.promise.resolve' },
      snapshot: { status: 'done' },
    });
    expect(fanout.current().some((text) => text.includes(turn))).toBe(false);
    stop();
  });

  it('sends only the keys that changed, and names the keys that lost their value', () => {
    const machine = setup({
      types: {
        context: {} as { count: number; note?: string; tags: string[] },
        events: {} as { type: 'COUNT' } | { type: 'CLEAR' },
      },
    }).createMachine({
      context: { count: 0, note: 'hello', tags: ['a', 'b'] },
      on: {
        COUNT: { actions: assign({ count: ({ context }) => context.count + 1 }) },
        CLEAR: { actions: assign({ note: undefined }) },
      },
    });
    const stream = new InspectionFrames();
    const frames: SerializedInspectionEvent[] = [];
    const actor = createActor(machine, {
      inspect: (event) => {
        if (event.type === '@xstate.snapshot')
          frames.push(JSON.parse(stream.frame(event, 1)) as SerializedInspectionEvent);
      },
    });
    actor.start();
    actor.send({ type: 'COUNT' });
    actor.send({ type: 'CLEAR' });
    expect(frames.map((f) => f.snapshot)).toEqual([
      { status: 'active', value: {}, context: { count: 0, note: 'hello', tags: ['a', 'b'] } },
      { status: 'active', value: {}, contextChanges: { count: 1 } },
      { status: 'active', value: {}, contextRemoved: ['note'] },
    ]);
    actor.stop();
  });

  it('each step is also one @xstate.transition record: the event, who sent it, the state-node transitions and the snapshot it reached', async () => {
    const engine = await toolBatchEngine();
    const stream = new InspectionFrames();
    const frames: SerializedInspectionEvent[] = [];
    const stop = engine.inspect((event) => {
      for (const text of stream.frames(event, 1)) frames.push(JSON.parse(text) as SerializedInspectionEvent);
    });
    await runBatches(engine, 3);
    stop();
    const snapshots = frames.filter((f) => f.type === '@xstate.snapshot');
    const transitions = frames.filter((f) => f.type === '@xstate.transition');
    expect(transitions.length).toBe(snapshots.length);
    let sourced = 0;
    let moved = 0;
    for (let i = 0; i < frames.length; i++) {
      const frame = frames[i]!;
      if (frame.type !== '@xstate.snapshot') continue;
      // Right after the snapshot that ends the step: the same actor, event and snapshot.
      const record = frames[i + 1]!;
      expect(record).toMatchObject({
        type: '@xstate.transition',
        actorId: frame.actorId,
        event: frame.event,
        snapshot: frame.snapshot,
      });
      // The source is the one the step's '@xstate.event' named, the transitions its microsteps'.
      const announced = frames
        .slice(0, i)
        .reverse()
        .find(
          (f) => f.type === '@xstate.event' && f.actorId === frame.actorId && isDeepStrictEqual(f.event, frame.event),
        );
      expect(record.sourceId).toBe(announced?.sourceId);
      if (record.sourceId) sourced += 1;
      if (record.transitions) moved += 1;
    }
    // Tool calls report to their batch, the batch to its run.
    expect(sourced).toBeGreaterThan(3 * 3);
    expect(moved).toBeGreaterThan(3 * 10);
  });

  it('a stream of XState 6’s @xstate.actor and @xstate.transition alone folds to the same contexts', async () => {
    const engine = await toolBatchEngine();
    const v5 = new InspectionFrames();
    const v6 = new InspectionFrames();
    const fromV5 = new Reader();
    const fromV6 = new Reader();
    const announced = new Map<object, { sourceRef: unknown }>();
    let records = 0;
    const stop = engine.inspect((event) => {
      for (const text of v5.frames(event, 1)) fromV5.read(JSON.parse(text) as SerializedInspectionEvent);
      // What XState 6 would report: the actor, and each step whole.
      if (event.type === '@xstate.event') announced.set(event.event, { sourceRef: event.sourceRef });
      if (event.type !== '@xstate.actor' && event.type !== '@xstate.snapshot') return;
      const whole =
        event.type === '@xstate.actor'
          ? event
          : ({
              type: '@xstate.transition',
              actorRef: event.actorRef,
              rootId: event.rootId,
              event: event.event,
              snapshot: event.snapshot,
              sourceRef: announced.get(event.event)?.sourceRef,
            } as unknown as InspectionEvent);
      const texts = v6.frames(whole, 1);
      expect(texts).toHaveLength(1);
      const frame = JSON.parse(texts[0]!) as SerializedInspectionEvent;
      if (frame.type === '@xstate.transition') records += 1;
      fromV6.read(frame);
    });
    await runBatches(engine, 3);
    stop();
    expect(records).toBeGreaterThan(3 * 10);
    expect(fromV6.contexts).toEqual(fromV5.contexts);
  });
});
