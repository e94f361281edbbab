export { InvariantMonitor } from './invariants.js';
export type {
  AcceptedMessage,
  InvariantMonitorOptions,
  InvariantName,
  Limits,
  ObservedEvent,
  Violation,
} from './invariants.js';
export { simulate } from './simulate.js';
export type { SimulationReport, SimulationViolation } from './simulation.js';
export type { ShrunkFailure } from './shrink.js';
export { DEFAULT_ARRIVAL, DEFAULT_FAULT_RATES, DEFAULT_TOOL_MIX, FAULT_KINDS, TOOL_KINDS } from './scenario.js';
export type { ArrivalOptions, FaultKind, SimulateOptions, ToolKind } from './scenario.js';
export { formatReport, reportJson } from './report.js';
export { runSimulateCommand, SIMULATE_USAGE } from './cli.js';
export type { SimulateIo } from './cli.js';
export { simulateDeployment, busiestHour } from './simulate-deployment.js';
export type { DeploymentOptions, DeploymentReport } from './simulate-deployment.js';
export type { DeploymentFaults } from './workload-scenario.js';
export type { DeploymentMetrics, Percentiles, TimelinePoint, Utilisation } from './deployment-metrics.js';
export { deriveWorkload } from './derive-workload.js';
export { WorkloadSchema, parseWorkload } from './workload.js';
export type { Workload, WorkloadInput, AgentWorkload, ToolModel, Empirical } from './workload.js';
export { deploymentHtml } from './deployment-html.js';
