export { ClusterNode } from './cluster-node.js';
export type { ClusterNodeOptions } from './cluster-node.js';
export type { MemberInfo } from './cluster-members.js';
export { SessionLeases } from './session-leases.js';
export type { AcquireResult, SessionLeasesOptions } from './session-leases.js';
export { RedisLimiter } from './redis-limiter.js';
export type { RedisLimiterOptions } from './redis-limiter.js';
export { ClusterKeys } from './cluster-keys.js';
