// The public API (README, "Quick tour: the library"). Names may grow; these keep their meanings.

// pure concurrency
export {
  Claims,
  normalizePath,
  pathsOverlap,
  claimsConflict,
  conflictReason,
  batchParallelizable,
  partitionParallelGroups,
  canonicalJson,
  describeClaim,
} from './concurrency/index.js';
export type { Claim, Scope } from './concurrency/index.js';

// engine
export { createEngine, Engine, EngineError, isEngineError, RunRequestSchema } from './engine/index.js';
export type {
  EngineOptions,
  EngineSnapshot,
  SubmitResult,
  RunRequest,
  RunEvent,
  RunEventType,
  RunEventOf,
  EngineEvent,
  StreamEvent,
  RunStatus,
  RunResult,
  EventStream,
  EventStreamFilter,
  Clock,
  EngineErrorCode,
  WaitOptions,
} from './engine/index.js';

// models and tools
export { scriptedModel, openAICompatibleModel, anthropicModel, googleModel, ModelError } from './model/index.js';
export type {
  ModelProvider,
  ModelChunk,
  ModelRequest,
  Message,
  ScriptTurn,
  ScriptContext,
  FinishReason,
  TokenUsage,
} from './model/index.js';
export { defineTool, ToolError, connectMcpServer } from './tools/index.js';
export type { Tool, ToolContext, McpConnection } from './tools/index.js';
export { idempotencyKeyOf, OUTCOME_UNKNOWN, outcomeUnknownError, replayRuleOf } from './tools/index.js';
export type { Reconcile, ReconcileAnswer, ReplayRule } from './tools/index.js';

// gateway and client
export { startGateway, NodeRegistry } from './gateway/index.js';
export type { Gateway, GatewayOptions } from './gateway/index.js';
export { connect, ClientError } from './client/index.js';
export type { SwitchyardClient } from './client/index.js';

// sandbox and approval
export { evaluateCommand, formatVerdict, runCommand } from './sandbox/index.js';
export type { CommandVerdict, CommandPolicy } from './sandbox/index.js';
export { decideApproval, summarizeAction } from './approval/index.js';
export type { ApprovalDecision, ApprovalRequest } from './approval/index.js';

// deterministic simulation
export {
  simulate,
  simulateDeployment,
  deriveWorkload,
  parseWorkload,
  WorkloadSchema,
  deploymentHtml,
} from './sim/index.js';
export type {
  SimulationReport,
  DeploymentOptions,
  DeploymentReport,
  DeploymentFaults,
  DeploymentMetrics,
  Workload,
} from './sim/index.js';

// configuration and storage
export { defaultConfig, loadConfig, watchConfig, ConfigError } from './config/index.js';
export type { Config, PartialConfig } from './config/index.js';
export { MemoryStore, LowdbStore } from './store/index.js';
export type { Store, RunRecord } from './store/index.js';

// operations: metrics, traces, health, logs (README, "Operating Switchyard")
export { startTelemetry, createLogger, readinessProbe } from './telemetry/index.js';
export type { Telemetry, TelemetryOptions, Logger, ReadinessOptions } from './telemetry/index.js';
export type { EngineObserver, RunStart } from './engine/index.js';
