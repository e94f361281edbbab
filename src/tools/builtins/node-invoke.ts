/*
 * The `node_invoke` builtin (docs/protocol.md, "Node clients"): one shell command on a connected
 * node client, in that node's workspace and sandbox. It claims the node: calls to distinct nodes
 * run side by side, calls to the same node one after another. Its command passes the command policy
 * and approval like bash's.
 */
import { z } from 'zod';
import { Claims } from '../../concurrency/index.js';
import { defineTool, ToolError } from '../tool.js';
import { bashTimeoutMs } from './bash.js';

const DEFAULT_MAX_OUTPUT_BYTES = 1_048_576;

export const nodeInvokeInput = z
  .object({
    node: z.string().trim().min(1).max(64).describe('The name of the connected node to run the command on.'),
    command: z.string().min(1).describe('The shell command.'),
    cwd: z.string().optional().describe("Working directory, relative to the node's workspace."),
    timeoutMs: z.number().int().positive().optional(),
  })
  .strict();

export type NodeInvokeInput = z.infer<typeof nodeInvokeInput>;

export const nodeInvokeTool = defineTool<NodeInvokeInput>({
  name: 'node_invoke',
  description:
    'Run a shell command on a connected node (a remote worker) in its own workspace. Returns the exit code and the ' +
    'combined stdout/stderr output. Calls to different nodes run in parallel. Optional cwd (relative to the ' +
    "node's workspace) and timeoutMs.",
  input: nodeInvokeInput,
  concurrencyClaim: ({ node }) => Claims.nodes([node]),
  commandOf: (input) => input.command,
  async execute(input, ctx) {
    if (!ctx.nodes) throw new ToolError('unavailable', 'node_invoke needs a gateway with connected nodes');
    const result = await ctx.nodes.invoke(
      input.node,
      {
        command: input.command,
        ...(input.cwd !== undefined ? { cwd: input.cwd } : {}),
        timeoutMs: bashTimeoutMs(input, ctx),
        maxOutputBytes: ctx.sandbox?.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES,
      },
      ctx.signal,
    );
    if (result.cancelled) throw new ToolError('cancelled', `the command on node "${input.node}" was cancelled`);
    if (result.timedOut) {
      const partial = result.output.trim();
      throw new ToolError(
        'timeout',
        `the command on node "${input.node}" timed out after ${result.durationMs} ms and was killed` +
          (partial === '' ? ' (no output)' : `; output so far:\n${partial}`),
      );
    }
    const { exitCode, signal, output, truncated, timedOut, durationMs, sandbox } = result;
    return {
      node: input.node,
      exitCode,
      signal,
      output,
      truncated,
      timedOut,
      durationMs,
      ...(sandbox ? { sandbox } : {}),
    };
  },
});
