export { startGateway } from './gateway.js';
export type { Gateway, GatewayOptions, GatewayStats, HttpRouteHandler } from './gateway.js';
export type { GatewayLogger } from './logger.js';
export type { GatewayEngine } from './method-handlers.js';
export { ensureToken, readToken, tokensEqual } from './auth-token.js';
export type { GatewayToken } from './auth-token.js';
export { MethodParamsSchemas, ApprovalDecisionSchema, isMethodName } from './methods.js';
export { GatewayCloseCode } from './close-codes.js';
export type {
  MethodName,
  MethodParams,
  MethodResults,
  Notifications,
  NotificationName,
  ApprovalDecision,
} from './methods.js';
export { RpcErrorCode, RequestFrameSchema } from './protocol.js';
export type { RpcErrorBody, RequestId } from './protocol.js';
export { InspectionFrames } from './inspection/inspection-frames.js';
export type { SerializedInspectionEvent, SerializedSnapshot } from './inspection/inspect-serialize.js';
export {
  NodeRegistry,
  runNodeClient,
  NodeClientError,
  NodeInvokeParamsSchema,
  NodeInvokeResultSchema,
} from './nodes/index.js';
export type { NodeInfo, NodeCommand, NodeInvoker, NodeInvokeResult, NodeClientOptions } from './nodes/index.js';
