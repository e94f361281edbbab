/*
 * MemoryStore defines the Store contract's behaviour table (store-conformance.ts).
 */
import { MemoryStore } from '../../src/store/index.js';
import { describeStoreConformance } from './store-conformance.js';

describeStoreConformance('MemoryStore', {
  open: () => Promise.resolve(new MemoryStore()),
  reread: (store) => Promise.resolve(store),
});
