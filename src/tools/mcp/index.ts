export { connectMcpServer, McpConnectionError } from './connect.js';
export type { McpConnection, McpServerConfig } from './connect.js';
export { adaptMcpTool } from './mcp-tool.js';
export type { McpContentOutput, McpTool } from './mcp-tool.js';
export { mcpClaimFunction } from './tool-claim.js';
export type { McpArgs } from './tool-claim.js';
export { mcpToolName } from './tool-name.js';
export { profileFromAnnotations } from './tool-profile.js';
export type { McpToolProfile } from './tool-profile.js';
