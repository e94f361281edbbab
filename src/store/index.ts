export { MemoryStore } from './memory-store.js';
export { LowdbStore } from './lowdb-store.js';
export type { LowdbStoreOptions, LowdbStoreStats } from './lowdb-store.js';
export { StoreError, isStoreError } from './store-error.js';
export type { StoreErrorCode } from './store-error.js';
export type { RunPage, RunQuery, RunRecord, RunState, RunSummary, SteerRecord, Store, StoredLaneEntry } from './types.js';
export { RUN_QUERY_MAX_LIMIT, runOutcomeOf, runSummaryOf } from './run-summary.js';
