export { defineTool, ToolError } from './tool.js';
export type { AnyTool, DelegatedRunResult, DelegationRequest, SandboxSettings, Tool, ToolContext } from './tool.js';
export type { ClaimContext } from '../concurrency/index.js';
export { ToolService } from './tool-service.js';
export type { AdmittedCall, ToolServiceOptions } from './tool-service.js';
export * from './builtins/index.js';
export { connectMcpServer } from './mcp/index.js';
export type { McpConnection, McpTool } from './mcp/index.js';
