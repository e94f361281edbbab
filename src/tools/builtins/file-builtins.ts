/** The file tools as one list, for registering them together. */
import type { AnyTool } from '../tool.js';
import { applyPatchTool } from './apply-patch.js';
import { fileEditTool } from './file-edit.js';
import { fileOpsTool } from './file-ops.js';
import { fileReadTool } from './file-read.js';
import { fileWriteTool } from './file-write.js';

export const fileBuiltins: readonly AnyTool[] = [
  fileReadTool,
  fileWriteTool,
  fileEditTool,
  applyPatchTool,
  fileOpsTool,
];
