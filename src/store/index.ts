export { MemoryStore } from './memory-store.js';
export type { RunRecord, RunState, Store, StoredLaneEntry } from './types.js';
