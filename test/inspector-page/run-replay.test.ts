/*
 * The run replay's state table (src/gateway/inspector-page/assets/run-replay.js): where the run
 * statechart was after each event of a log, as rows of event sequences and the states they
 * pass through; and every state the table names is a state of machines/run.machine.ts.
 */
import { describe, expect, it } from 'vitest';
import { runMachine } from '../../machines/run.machine.js';
import { machineGraph } from '../../src/diagrams/index.js';
import { importInspectorModule } from './inspector-modules.js';

interface RunReplay {
  RUN_STATE_BEFORE_EVENTS: string;
  RUN_STATE_AFTER_EVENT: Record<string, string>;
  runStatePaths(events: { type: string }[]): string[];
  stateValueOf(path: string): unknown;
}

const replay = await importInspectorModule<RunReplay>('run-replay.js');
const events = (...types: string[]) => types.map((type) => ({ type }));
const short = (path: string) => path.split('.').at(-1);

describe('runStatePaths', () => {
  it.each<[string, string[], string[]]>([
    [
      'a run with a tool batch, then an answer',
      [
        'run.started',
        'turn.started',
        'model.delta',
        'model.message',
        'tool.scheduled',
        'tool.started',
        'tool.started',
        'tool.finished',
        'tool.finished',
        'turn.finished',
        'turn.started',
        'model.message',
        'turn.finished',
        'run.completed',
      ],
      [
        'thinking',
        'thinking',
        'thinking',
        'thinking',
        'acting',
        'acting',
        'acting',
        'acting',
        'acting',
        'boundary',
        'thinking',
        'thinking',
        'boundary',
        'completed',
      ],
    ],
    [
      'a message that waited in its lane',
      ['run.queued', 'run.started', 'turn.started'],
      ['queued', 'thinking', 'thinking'],
    ],
    [
      'waiting for permits after its session admitted it',
      ['run.queued', 'run.queued', 'run.started'],
      ['queued', 'queued', 'thinking'],
    ],
    [
      'a steer read at a boundary',
      ['turn.finished', 'run.steered', 'turn.started'],
      ['boundary', 'thinking', 'thinking'],
    ],
    [
      'an approval inside a batch',
      ['tool.scheduled', 'approval.requested', 'approval.resolved', 'tool.started'],
      ['acting', 'acting', 'acting', 'acting'],
    ],
    [
      'a retried model call that fails',
      ['run.started', 'turn.started', 'run.retrying', 'run.failed'],
      ['thinking', 'thinking', 'thinking', 'failed'],
    ],
    ['superseded in the lane', ['run.queued', 'run.cancelled'], ['queued', 'cancelled']],
    [
      'interrupted while acting',
      ['tool.scheduled', 'tool.started', 'run.cancelled'],
      ['acting', 'acting', 'cancelled'],
    ],
    [
      'a type the table does not know stays where it was',
      ['tool.scheduled', 'tool.waiting', 'sandbox.warning', 'tool.started'],
      ['acting', 'acting', 'acting', 'acting'],
    ],
    ['nothing before the first event', ['sandbox.warning'], ['queued']],
  ])('%s', (_name, types, states) => {
    expect(replay.runStatePaths(events(...types)).map(short)).toEqual(states);
  });

  it('names whole paths, and an empty log has none', () => {
    expect(replay.runStatePaths(events('run.started', 'tool.scheduled', 'run.completed'))).toEqual([
      'live.running.thinking',
      'live.running.acting',
      'completed',
    ]);
    expect(replay.runStatePaths([])).toEqual([]);
  });

  it('names only states of the run machine, each a leaf it can rest in', () => {
    const graph = machineGraph(runMachine);
    const leaves = new Set(graph.nodes.filter((n) => n.type === 'atomic' || n.type === 'final').map((n) => n.path));
    for (const path of [replay.RUN_STATE_BEFORE_EVENTS, ...Object.values(replay.RUN_STATE_AFTER_EVENT)])
      expect(leaves, path).toContain(path);
  });

  it.each<[string, unknown]>([
    ['live.running.thinking', { live: { running: 'thinking' } }],
    ['live.queued', { live: 'queued' }],
    ['completed', 'completed'],
  ])('the snapshot value of %s', (path, value) => {
    expect(replay.stateValueOf(path)).toEqual(value);
  });
});
