export { NodeRegistry } from './node-registry.js';
export type { NodeInfo, NodeRegistryOptions } from './node-registry.js';
export { runNodeClient, NodeClientError } from './node-client.js';
export type { NodeClientErrorCode, NodeClientLogger, NodeClientOptions } from './node-client.js';
export type { NodeExecutorOptions } from './node-executor.js';
export {
  NodeInvokeParamsSchema,
  NodeInvokeResultSchema,
  NodeNameSchema,
  NODE_ROLE,
  ROLE_HEADER,
  NODE_NAME_HEADER,
} from './node-protocol.js';
export type { NodeCommand, NodeInvoker, NodeInvokeParams, NodeInvokeResult } from './node-protocol.js';
