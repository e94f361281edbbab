/** Every builtin tool, registered by createEngine before the caller's own tools. */
import type { AnyTool } from '../tool.js';
import { bashTool } from './bash.js';
import { fileBuiltins } from './file-builtins.js';
import { nodeInvokeTool } from './node-invoke.js';
import { sessionSendTool } from './session-send.js';

export const builtinTools: readonly AnyTool[] = [...fileBuiltins, bashTool, nodeInvokeTool, sessionSendTool];
