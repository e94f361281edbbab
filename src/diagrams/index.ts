export { machineGraph } from './machine-graph.js';
export type { MachineGraph, StateGraphNode, StateGraphEdge, StateKind } from './machine-graph.js';
export { layoutMachineGraphs } from './layout.js';
export type { StatechartLayout, LaidOutState, LaidOutEdge } from './layout.js';
export { renderStatechartSvg } from './svg.js';
export { inspectedMachines } from './machines.js';
export { statechartCatalog } from './catalog.js';
export type { StatechartEntry } from './catalog.js';
export { exportStatecharts } from './export.js';
