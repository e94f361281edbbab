export { defineTool } from './tool.js';
export type { AnyTool, ClaimContext, Tool, ToolContext } from './tool.js';
