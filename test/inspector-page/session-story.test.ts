/*
 * A busy session's story (src/gateway/inspector-page/assets/session-story.js), first as rows of
 * event logs and what they tell, then on the log a real engine writes for a steer, a queued
 * message and a burst of interrupts: the story must name the run each steer went into and
 * at which turn, when the queued message ran, and who interrupted or superseded whom.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { sleep, systemClock } from '../../src/core/clock.js';
import { createEngine } from '../../src/engine/index.js';
import { scriptedModel, type ScriptContext, type ScriptTurn } from '../../src/model/index.js';
import { defineTool } from '../../src/tools/index.js';
import { importInspectorModule } from './inspector-modules.js';

interface Lane {
  runId: string;
  arrivedAt: number;
  queuedAt?: number;
  queuedFor?: string;
  startedAt?: number;
  endedAt?: number;
  state?: string;
  outcome?: string;
  turns: { turn: number; startedAt: number; finishedAt?: number }[];
  steers: { steerId: string; text: string; turn?: number; at: number }[];
  cancelledBy?: { kind: string; by: string };
}
interface Story {
  t0: number;
  t1: number;
  runs: Lane[];
  links: { kind: string; by: string; run: string; at: number }[];
}

const { sessionStory } = await importInspectorModule<{ sessionStory(events: object[]): Story }>('session-story.js');

/** A session log written by hand: one second apart, numbered in the order given. */
function log(...entries: [type: string, runId: string, data?: object][]): object[] {
  return entries.map(([type, runId, data], i) => ({
    type,
    runId,
    sessionId: 's',
    seq: 0,
    sessionSeq: i + 1,
    at: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
    ...data,
  }));
}
const t = (second: number) => Date.UTC(2026, 0, 1, 0, 0, second);
const links = (story: Story) => story.links.map(({ kind, by, run }) => `${by} ${kind}s ${run}`);

describe('sessionStory, by rule', () => {
  it('a queued message: when it arrived, how long it waited, when it ran', () => {
    const story = sessionStory(
      log(
        ['run.started', 'a'],
        ['run.queued', 'b', { position: 1, reason: 'session_busy' }],
        ['turn.started', 'a', { turn: 0 }],
        ['turn.finished', 'a', { turn: 0 }],
        ['run.completed', 'a'],
        ['run.started', 'b'],
        ['run.completed', 'b'],
      ),
    );
    expect(story.runs.map((r) => r.runId)).toEqual(['a', 'b']);
    expect(story.runs[1]).toMatchObject({
      arrivedAt: t(1),
      queuedAt: t(1),
      queuedFor: 'session_busy',
      startedAt: t(5),
      endedAt: t(6),
      state: 'completed',
      outcome: 'completed',
    });
    expect(story.runs[0]!.turns).toEqual([{ turn: 0, startedAt: t(2), finishedAt: t(3) }]);
    expect([story.t0, story.t1]).toEqual([t(0), t(6)]);
    expect(story.links).toEqual([]);
  });

  it('a steer: the run it went into and the turn that read it', () => {
    const story = sessionStory(
      log(
        ['run.started', 'a'],
        ['turn.started', 'a', { turn: 0 }],
        ['turn.finished', 'a', { turn: 0 }],
        ['run.steered', 'a', { steerId: 'st', text: 'also tides', consumedAtTurn: 1 }],
        ['turn.started', 'a', { turn: 1 }],
      ),
    );
    expect(story.runs).toHaveLength(1);
    expect(story.runs[0]!.steers).toEqual([{ steerId: 'st', text: 'also tides', turn: 1, at: t(3) }]);
  });

  it.each<[string, Parameters<typeof log>, string[]]>([
    [
      'an interrupt cancels the running run',
      [
        ['run.started', 'a'],
        ['run.queued', 'b', { reason: 'session_busy' }],
        ['run.cancelled', 'a', { reason: 'interrupted' }],
        ['run.started', 'b'],
      ],
      ['b interrupts a'],
    ],
    [
      'a burst: each interrupt supersedes the one still waiting in the lane',
      [
        ['run.started', 'a'],
        ['run.queued', 'i1', { reason: 'session_busy' }],
        ['run.cancelled', 'a', { reason: 'interrupted' }],
        ['run.cancelled', 'i1', { reason: 'superseded' }],
        ['run.queued', 'i2', { reason: 'session_busy' }],
        ['run.cancelled', 'i2', { reason: 'superseded' }],
        ['run.queued', 'i3', { reason: 'session_busy' }],
        ['run.started', 'i3'],
      ],
      ['i1 interrupts a', 'i2 supersedes i1', 'i3 supersedes i2'],
    ],
    [
      'one interrupt supersedes several waiting ones at once',
      [
        ['run.queued', 'i1', { reason: 'session_busy' }],
        ['run.queued', 'i2', { reason: 'session_busy' }],
        ['run.cancelled', 'i1', { reason: 'superseded' }],
        ['run.cancelled', 'i2', { reason: 'superseded' }],
        ['run.queued', 'i3', { reason: 'session_busy' }],
      ],
      ['i3 supersedes i1', 'i3 supersedes i2'],
    ],
    [
      'an admitted interrupter still waiting for permits is superseded after the newcomer is queued',
      [
        ['run.queued', 'i1', { reason: 'limits' }],
        ['run.queued', 'i2', { reason: 'session_busy' }],
        ['run.cancelled', 'i1', { reason: 'superseded' }],
      ],
      ['i2 supersedes i1'],
    ],
    [
      'a message queued just before an interrupt is not taken for it',
      [
        ['run.queued', 'q', { reason: 'session_busy' }],
        ['run.cancelled', 'i1', { reason: 'superseded' }],
        ['run.queued', 'i2', { reason: 'session_busy' }],
      ],
      ['i2 supersedes i1'],
    ],
    [
      'other cancellations are nobody’s',
      [
        ['run.queued', 'b', { reason: 'session_busy' }],
        ['run.cancelled', 'a', { reason: 'stopped' }],
        ['run.cancelled', 'b', { reason: 'purged' }],
      ],
      [],
    ],
  ])('%s', (_name, entries, expected) => {
    const story = sessionStory(log(...entries));
    expect(links(story)).toEqual(expected);
    for (const link of story.links)
      expect(story.runs.find((r) => r.runId === link.run)?.cancelledBy).toEqual({ kind: link.kind, by: link.by });
  });

  it('reads any order and any subset of the log; across a gap in the numbering it draws no link', () => {
    const events = log(
      ['run.started', 'a'],
      ['run.queued', 'b', { reason: 'session_busy' }],
      ['run.cancelled', 'a', { reason: 'interrupted' }],
    );
    expect(links(sessionStory([...events].reverse()))).toEqual(['b interrupts a']);
    // b's run not loaded: a was interrupted by a message this page does not show.
    expect(links(sessionStory([events[0]!, events[2]!]))).toEqual([]);
    expect(sessionStory([])).toEqual({ t0: 0, t1: 0, runs: [], links: [] });
  });
});

describe('sessionStory of a real engine’s log', () => {
  const lookup = defineTool({
    name: 'lookup',
    description: 'Looks a word up (takes a moment).',
    input: z.object({ word: z.string() }),
    readOnly: true,
    async execute({ word }, ctx) {
      await sleep(systemClock, 150, ctx.signal);
      return { word };
    },
  });
  /** Turn 0 looks two words up in parallel; a later turn answers; "slow" thinks until interrupted. */
  function script(ctx: ScriptContext): ScriptTurn {
    if (ctx.input.includes('slow')) return { text: 'too late', delayMs: 10_000 };
    if (ctx.turn === 0)
      return {
        toolCalls: [
          { name: 'lookup', args: { word: 'a' } },
          { name: 'lookup', args: { word: 'b' } },
        ],
        delayMs: 400,
      };
    return { text: 'done', delayMs: 50 };
  }

  it('names the steer’s run and turn, when the queued message ran, and the burst’s interrupts', async () => {
    const engine = await createEngine({ models: { scripted: scriptedModel(script) }, tools: [lookup] });
    try {
      const first = await engine.submit({ sessionId: 'alice', input: 'harbor' });
      await sleep(systemClock, 40);
      const steer = await engine.submit({ sessionId: 'alice', input: 'also tides', busyPolicy: 'steer' });
      const queued = await engine.submit({ sessionId: 'alice', input: 'anchor', busyPolicy: 'queue' });
      await engine.wait(queued.runId);

      const slow = await engine.submit({ sessionId: 'bob', input: 'slow question' });
      await sleep(systemClock, 50);
      const burst = await Promise.all(
        ['one', 'two', 'three'].map((input) => engine.submit({ sessionId: 'bob', input, busyPolicy: 'interrupt' })),
      );
      await engine.wait(burst[2]!.runId);

      // As the page reads a session: the logs of its runs, merged.
      const logs = async (...runIds: string[]) =>
        (await Promise.all(runIds.map((runId) => engine.history(runId)))).flat();
      const alice = sessionStory(await logs(first.runId, queued.runId));
      expect(steer).toMatchObject({ outcome: 'steered', intoRunId: first.runId });
      const into = alice.runs.find((r) => r.runId === first.runId)!;
      expect(into.steers).toEqual([expect.objectContaining({ steerId: steer.runId, text: 'also tides', turn: 1 })]);
      const later = alice.runs.find((r) => r.runId === queued.runId)!;
      expect(later.queuedAt).toBeLessThan(later.startedAt!);
      expect(later.startedAt).toBeGreaterThanOrEqual(into.endedAt!);

      const [one, two, three] = burst.map((r) => r.runId);
      const bob = sessionStory(await logs(slow.runId, one!, two!, three!));
      expect(links(bob)).toEqual([
        `${one} interrupts ${slow.runId}`,
        `${two} supersedes ${one}`,
        `${three} supersedes ${two}`,
      ]);
      expect(bob.runs.find((r) => r.runId === three)).toMatchObject({ state: 'completed' });
    } finally {
      await engine.close();
    }
  });
});
