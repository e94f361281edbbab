/*
 * Every statechart, drawn once: its SVG plus the map from snapshot paths to state ids that a
 * live view needs to light up the states an actor is in. What the inspector page loads and
 * what `switchyard inspect --export` writes.
 */
import { layoutMachineGraphs } from './layout.js';
import { machineGraph } from './machine-graph.js';
import { inspectedMachines } from './machines.js';
import { renderStatechartSvg } from './svg.js';

export interface StatechartEntry {
  /** File and display name: 'limiter' | 'session' | 'run' | 'act' | 'tool-call'. */
  name: string;
  /** The machine's id, as inspection events carry it ('toolCall' for tool-call). */
  machineId: string;
  svg: string;
  /** Snapshot value path ('live.running.thinking', '' for the root) -> state node id. */
  states: Record<string, string>;
}

export async function statechartCatalog(): Promise<StatechartEntry[]> {
  const graphs = inspectedMachines.map(({ machine }) => machineGraph(machine));
  const layouts = await layoutMachineGraphs(graphs);
  return inspectedMachines.map(({ name }, i) => {
    const graph = graphs[i]!;
    return {
      name,
      machineId: graph.machineId,
      svg: renderStatechartSvg(layouts[i]!),
      states: Object.fromEntries(graph.nodes.map((n) => [n.path, n.id])),
    };
  });
}
