export { InvariantMonitor } from './invariants.js';
export type { AcceptedMessage, InvariantMonitorOptions, InvariantName, Limits, ObservedEvent, Violation } from './invariants.js';
