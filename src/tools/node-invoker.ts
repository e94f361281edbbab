/*
 * The port node_invoke runs commands through: the tool owns it, the gateway's NodeRegistry
 * implements it (its zod schemas are checked against these interfaces at compile time).
 */

/** A command to run on a node. */
export interface NodeCommand {
  command: string;
  /** Relative to the node's workspace; must stay inside it. */
  cwd?: string | undefined;
  timeoutMs: number;
  /** Output budget of the command (stdout, stderr, interleaved, each). Default 1 MiB. */
  maxOutputBytes?: number | undefined;
}

/** What a node answers for one command. */
export interface NodeInvokeResult {
  exitCode: number | null;
  signal: string | null;
  output: string;
  truncated: boolean;
  timedOut: boolean;
  /** The node aborted the command on a node.cancel (or because it is shutting down). */
  cancelled?: boolean | undefined;
  durationMs: number;
  sandbox?: 'bwrap' | 'none' | undefined;
}

/** Runs a command on a connected node and resolves with its answer (ctx.nodes of node_invoke). */
export interface NodeInvoker {
  invoke(node: string, command: NodeCommand, signal?: AbortSignal): Promise<NodeInvokeResult>;
}
