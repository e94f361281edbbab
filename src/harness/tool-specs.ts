/* What the model is told about a tool: its name, description and input as JSON Schema. */
import { z } from 'zod';
import type { ToolSpec } from '../model/types.js';
import type { AnyTool } from '../tools/tool.js';

export function toolSpecOf(tool: AnyTool & { jsonSchema?: unknown }): ToolSpec {
  // MCP tools carry their server's own JSON Schema; zod only sees a generic object there.
  let parameters: unknown = tool.jsonSchema ?? { type: 'object' };
  if (tool.jsonSchema === undefined) {
    try {
      parameters = z.toJSONSchema(tool.input);
    } catch {
      // A schema zod cannot express as JSON Schema still works; the model just sees less.
    }
  }
  return { name: tool.name, description: tool.description, parameters };
}
