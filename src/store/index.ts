export { MemoryStore } from './memory-store.js';
export { LowdbStore } from './lowdb-store.js';
export type { LowdbStoreOptions, LowdbStoreStats } from './lowdb-store.js';
export { StoreError, isStoreError } from './store-error.js';
export type { StoreErrorCode } from './store-error.js';
export type { RunRecord, RunState, SteerRecord, Store, StoredLaneEntry } from './types.js';
