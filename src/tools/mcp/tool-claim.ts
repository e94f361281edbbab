/**
 * The resource claim of one call to an MCP tool (docs/claims.md, "Claims of the builtin tools").
 * Read-only tools whose input schema has a `path` (string) or `paths` (string[]) argument declare
 * those paths as reads; every other read-only tool is plainly shared and every other tool is
 * global.
 */
import type { Tool as McpToolDescriptor } from '@modelcontextprotocol/sdk/types.js';
import { Claims, type Claim } from '../../concurrency/index.js';

export type McpArgs = Record<string, unknown>;

type JsonSchema = McpToolDescriptor['inputSchema'];

function propertyType(schema: JsonSchema, name: string): unknown {
  const property = schema.properties?.[name];
  return typeof property === 'object' && property !== null ? (property as { type?: unknown }).type : undefined;
}

function declaresStringArray(schema: JsonSchema, name: string): boolean {
  if (propertyType(schema, name) !== 'array') return false;
  const items = (schema.properties?.[name] as { items?: { type?: unknown } }).items;
  return items?.type === 'string';
}

/** A value that is not a string stays in the list as `null`, which makes the reads unknown. */
function readEntries(value: unknown): (string | null)[] {
  if (Array.isArray(value)) return value.map((entry) => (typeof entry === 'string' ? entry : null));
  return [typeof value === 'string' ? value : null];
}

/**
 * Builds the claim function of a tool. Writes stay global even when their arguments look like
 * paths (`path`, `source`, `destination`): what a write touches depends on the server's
 * semantics, which we do not know, and a wrong guess would let conflicting writes run
 * together, while global only costs parallelism.
 *
 * Read paths are kept as the model wrote them, not resolved against the run's workspace: the
 * server resolves them its own way (the filesystem server: against its allowed directories).
 * A relative read therefore overlaps every absolute write, which is the conservative answer.
 */
export function mcpClaimFunction(descriptor: McpToolDescriptor, readOnly: boolean): (args: McpArgs) => Claim {
  if (!readOnly) return () => Claims.global();
  const readsPath = propertyType(descriptor.inputSchema, 'path') === 'string';
  const readsPaths = declaresStringArray(descriptor.inputSchema, 'paths');
  if (!readsPath && !readsPaths) return () => Claims.shared();
  return (args) => {
    // An absent path argument means the server reads a default location: the footprint is unknown.
    const reads = [...(readsPath ? readEntries(args.path) : []), ...(readsPaths ? readEntries(args.paths) : [])];
    return Claims.shared(reads);
  };
}
