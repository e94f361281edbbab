export { machineGraph } from './machine-graph.js';
export type { MachineGraph, StateGraphNode, StateGraphEdge, StateKind } from './machine-graph.js';
export { layoutMachineGraph } from './layout.js';
export type { StatechartLayout, LaidOutState, LaidOutEdge } from './layout.js';
export { renderStatechartSvg, statechartSvg } from './svg.js';
export { inspectedMachines } from './machines.js';
export { exportStatecharts } from './export.js';
