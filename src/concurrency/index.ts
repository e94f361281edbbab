export { Claims, normalizeClaim, describeClaim, describeScope } from './claims.js';
export type { Claim, Scope, ClaimEntries, ClaimContext } from './claims.js';
export { normalizePath } from './normalize-path.js';
export { pathsOverlap } from './paths-overlap.js';
export { claimsConflict, conflictReason } from './conflict.js';
export { partitionParallelGroups, batchParallelizable } from './partition.js';
export { canonicalJson } from './canonical-json.js';
