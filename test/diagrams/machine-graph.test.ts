/*
 * The statecharts as data and as pictures: the run machine's graph read as a table of its
 * states and transitions; every machine laid out with children inside their parents and
 * drawn as an SVG with one data-state-id per state; and docs/statecharts/ (embedded in the
 * README) matching what the machines draw today.
 */
import { readFile } from 'node:fs/promises';
import { beforeAll, describe, expect, it } from 'vitest';
import type { AnyStateNode } from 'xstate';
import { runMachine } from '../../machines/run.machine.js';
import { statechartCatalog, type StatechartEntry } from '../../src/diagrams/catalog.js';
import { layoutMachineGraphs, type StatechartLayout } from '../../src/diagrams/layout.js';
import { machineGraph, type MachineGraph } from '../../src/diagrams/machine-graph.js';
import { inspectedMachines } from '../../src/diagrams/machines.js';

describe('machineGraph(runMachine)', () => {
  const graph = machineGraph(runMachine);
  const node = (id: string) => graph.nodes.find((n) => n.id === id);

  it.each([
    // id, parent, type, initial
    ['run', undefined, 'compound', false],
    ['run.live', 'run', 'compound', true],
    ['run.live.queued', 'run.live', 'atomic', true],
    ['run.live.running', 'run.live', 'compound', false],
    ['run.live.running.thinking', 'run.live.running', 'atomic', true],
    ['run.live.running.acting', 'run.live.running', 'atomic', false],
    ['run.live.running.boundary', 'run.live.running', 'atomic', false],
    ['run.live.ending', 'run.live', 'final', false],
    ['run.completed', 'run', 'final', false],
    ['run.cancelled', 'run', 'final', false],
    ['run.failed', 'run', 'final', false],
  ] as const)('state %s: parent %s, %s, initial %s', (id, parent, type, initial) => {
    const state = node(id);
    expect(state?.parent).toBe(parent);
    expect(state?.type).toBe(type);
    expect(state?.initial ?? false).toBe(initial);
  });

  it('has exactly the states of the definition', () => {
    expect(graph.nodes).toHaveLength(11);
    expect(node('run.live.running.thinking')?.path).toBe('live.running.thinking');
    expect(node('run')?.path).toBe('');
  });

  it.each([
    // source, target, label
    ['run.live.queued', 'run.live.running', 'GRANTED'],
    ['run.live', 'run.live.ending', 'CANCEL'],
    ['run.live', 'run.live.ending', 'STEER_DUE [steerDueTo(interrupt)]'],
    ['run.live.queued', 'run.live.ending', 'START_DUE'],
    ['run.live.running', 'run.live.ending', 'after runDeadline'],
    ['run.live.running.thinking', 'run.live.running.acting', 'MODEL_REPLY [replyHasToolCalls]'],
    ['run.live.running.thinking', 'run.live.running.boundary', 'MODEL_REPLY'],
    ['run.live.running.thinking', 'run.live.ending', 'MODEL_FAILED'],
    ['run.live.running.acting', 'run.live.ending', 'done: act [batchFailedFatally]'],
    ['run.live.running.acting', 'run.live.running.boundary', 'done: act'],
    ['run.live.running.acting', 'run.live.ending', 'error: act'],
    ['run.live.running.boundary', 'run.live.ending', 'always [modelIsDone]'],
    ['run.live.running.boundary', 'run.live.ending', 'always [iterationCapReached]'],
    ['run.live.running.boundary', 'run.live.running.thinking', 'always'],
    ['run.live', 'run.completed', 'done [outcomeIs(completed)]'],
    ['run.live', 'run.cancelled', 'done [outcomeIs(cancelled)]'],
    ['run.live', 'run.failed', 'done'],
  ])('%s -> %s on "%s"', (source, target, label) => {
    expect(graph.edges).toContainEqual({ source, target, label });
  });

  it('has no other transitions; events handled in place and invoked actors are listed on their state', () => {
    expect(graph.edges).toHaveLength(17);
    expect(node('run.live')?.internal).toEqual(['STEER', 'STEER_DUE [steerDueTo(queue)]']);
    expect(node('run.live.running.acting')).toMatchObject({ invokes: ['act'], internal: ['STEER'] });
    expect(node('run.live.running.thinking')?.invokes).toBeUndefined();
  });
});

describe('every machine', () => {
  let graphs: MachineGraph[];
  let layouts: StatechartLayout[];
  let catalog: StatechartEntry[];

  beforeAll(async () => {
    graphs = inspectedMachines.map(({ machine }) => machineGraph(machine));
    [layouts, catalog] = await Promise.all([layoutMachineGraphs(graphs), statechartCatalog()]);
  });

  const stateNodesOf = (state: AnyStateNode): AnyStateNode[] => [
    state,
    ...Object.values(state.states).flatMap((s) => stateNodesOf(s as AnyStateNode)),
  ];

  it.each(inspectedMachines.map(({ name }, i) => [name, i] as const))(
    '%s: a node per state, an edge end on a known state',
    (_name, i) => {
      const graph = machineGraph(inspectedMachines[i]!.machine);
      expect(graph.nodes.map((n) => n.id).sort()).toEqual(
        stateNodesOf(inspectedMachines[i]!.machine.root)
          .map((s) => s.id)
          .sort(),
      );
      const ids = new Set(graph.nodes.map((n) => n.id));
      for (const edge of graph.edges) {
        expect(ids).toContain(edge.source);
        expect(ids).toContain(edge.target);
        expect(edge.label).not.toMatch(/^xstate\./);
      }
    },
  );

  it('lays every state out inside its parent, and every transition as a routed edge', () => {
    for (const layout of layouts) {
      const byId = new Map(layout.states.map((s) => [s.id, s]));
      for (const state of layout.states) {
        expect(state.width, state.id).toBeGreaterThan(0);
        const parent = state.parent ? byId.get(state.parent) : undefined;
        if (!parent) continue;
        expect(state.x, state.id).toBeGreaterThanOrEqual(parent.x);
        expect(state.y, state.id).toBeGreaterThanOrEqual(parent.y);
        expect(state.x + state.width, state.id).toBeLessThanOrEqual(parent.x + parent.width);
        expect(state.y + state.height, state.id).toBeLessThanOrEqual(parent.y + parent.height);
      }
      for (const edge of layout.edges)
        expect(edge.points.length, `${edge.source} -> ${edge.target}`).toBeGreaterThanOrEqual(2);
    }
  });

  it('draws each machine as a self-contained SVG with a data-state-id per state', () => {
    expect(catalog.map((c) => c.name)).toEqual(['limiter', 'session', 'run', 'act', 'tool-call']);
    catalog.forEach((entry, i) => {
      const graph = graphs[i]!;
      expect(entry.machineId).toBe(graph.machineId);
      expect(entry.svg).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"[^>]* viewBox="0 0 \d+ \d+"/);
      expect(entry.svg.replaceAll('http://www.w3.org/2000/svg', '')).not.toMatch(/https?:|<script|href=/);
      const drawn = [...entry.svg.matchAll(/<g class="sc-state[^"]*" data-state-id="([^"]+)"/g)].map((m) => m[1]);
      expect(drawn.sort()).toEqual(graph.nodes.map((n) => n.id).sort());
      expect(Object.values(entry.states).sort()).toEqual(graph.nodes.map((n) => n.id).sort());
    });
    const run = catalog.find((c) => c.name === 'run')!;
    expect(run.states['live.running.thinking']).toBe('run.live.running.thinking');
    expect(run.svg).toContain('>GRANTED<');
    expect(run.svg).toContain('>CANCEL<');
  });

  it('matches docs/statecharts/ (regenerate with `switchyard inspect --export docs/statecharts`)', async () => {
    for (const entry of catalog) {
      const committed = await readFile(new URL(`../../docs/statecharts/${entry.name}.svg`, import.meta.url), 'utf8');
      expect(committed, entry.name).toBe(`${entry.svg}\n`);
    }
  });
});
