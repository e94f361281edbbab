export { startTelemetry } from './telemetry.js';
export type { Telemetry, TelemetryOptions } from './telemetry.js';
export { createLogger, logLevelOf, LOG_LEVEL_ENV } from './logger.js';
export type { Logger, LoggerOptions, LogLevel } from './logger.js';
export { gatewayLoggerOf } from './gateway-log.js';
export { readinessProbe } from './readiness.js';
export type { ReadinessOptions } from './readiness.js';
export { tracesUrlOf } from './otlp-tracing.js';
export { SWITCHYARD_ATTRIBUTES } from './span-attributes.js';
