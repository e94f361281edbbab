export { MemoryStore } from './memory-store.js';
export { LowdbStore } from './lowdb-store.js';
export type { LowdbStoreOptions, LowdbStoreStats } from './lowdb-store.js';
export { StoreError, isStoreError } from './store-error.js';
export type { StoreErrorCode } from './store-error.js';
// The Redis store and client are imported from their own files (redis-store.js, redis-client.js),
// so that nothing that uses only files or memory loads the Redis client.
export type { RedisStoreOptions, SessionFencing } from './redis-store.js';
export type { Redis, RedisClientOptions } from './redis-client.js';
export type {
  RunPage,
  RunQuery,
  RunRecord,
  RunState,
  RunSummary,
  SessionWork,
  SkippedRun,
  SteerRecord,
  Store,
  StoreHealth,
  StoredLaneEntry,
} from './types.js';
export type { QuarantineEntry } from './quarantine.js';
export { RUN_QUERY_MAX_LIMIT, runOutcomeOf, runSummaryOf } from './run-summary.js';
