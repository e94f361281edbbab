export { InvariantMonitor } from './invariants.js';
export type { AcceptedMessage, InvariantMonitorOptions, InvariantName, Limits, ObservedEvent, Violation } from './invariants.js';
export { simulate } from './simulate.js';
export type { ShrunkFailure, SimulationReport, SimulationViolation } from './simulate.js';
export { DEFAULT_ARRIVAL, DEFAULT_FAULT_RATES, DEFAULT_TOOL_MIX, FAULT_KINDS, TOOL_KINDS } from './scenario.js';
export type { ArrivalOptions, FaultKind, SimulateOptions, ToolKind } from './scenario.js';
export { formatReport, reportJson } from './report.js';
export { runSimulateCommand, SIMULATE_USAGE } from './cli.js';
