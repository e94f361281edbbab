/*
 * What a node client does with one node.invoke: the command through the sandboxed command
 * runner in the node's own workspace, under the node's own sandbox settings, stopped (its
 * whole process group) when the gateway cancels it or the node shuts down.
 */
import path from 'node:path';
import { runCommand, type SandboxBackend } from '../../sandbox/run-command.js';
import { ToolError } from '../../tools/tool.js';
import type { NodeInvokeParams, NodeInvokeResult } from './node-protocol.js';

export interface NodeExecutorOptions {
  /** Absolute path of the node's workspace; commands run in it (or below it, with cwd). */
  workspace: string;
  backend: SandboxBackend;
  /** Network access inside bwrap (unsandboxed commands always have it). Default false. */
  network?: boolean;
  /** Reports an unsandboxed fallback (backend auto without bwrap). */
  onWarning?(message: string): void;
}

const DEFAULT_MAX_OUTPUT_BYTES = 1_048_576;
const FALLBACK_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export async function executeInvocation(
  params: NodeInvokeParams,
  options: NodeExecutorOptions,
  signal: AbortSignal,
): Promise<NodeInvokeResult> {
  const workspace = path.resolve(options.workspace);
  const result = await runCommand({
    command: params.command,
    cwd: workspaceCwd(workspace, params.cwd),
    env: {
      PATH: process.env['PATH'] ?? FALLBACK_PATH,
      HOME: workspace,
      LANG: process.env['LANG'] ?? 'C.UTF-8',
    },
    timeoutMs: params.timeoutMs,
    signal,
    maxOutputBytes: params.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES,
    network: options.network ?? false,
    backend: options.backend,
    workspace,
    ...(options.onWarning ? { onWarning: options.onWarning } : {}),
  });
  const { exitCode, signal: killedBy, output, truncated, timedOut, cancelled, durationMs, sandbox } = result;
  return { exitCode, signal: killedBy, output, truncated, timedOut, cancelled, durationMs, sandbox };
}

/** A lexical check, as bash does: cwd must not leave the node's workspace. */
function workspaceCwd(workspace: string, cwd: string | undefined): string {
  const resolved = path.resolve(workspace, cwd ?? '.');
  if (resolved !== workspace && !resolved.startsWith(workspace + path.sep)) {
    throw new ToolError('outside_workspace', `cwd ${JSON.stringify(cwd)} resolves outside the node's workspace`);
  }
  return resolved;
}

/**
 * The answer frame of an invocation, with its output cut until the frame fits in
 * `maxFrameBytes` (the gateway closes a connection that sends a bigger one).
 */
export function answerFrame(id: string | number, result: NodeInvokeResult, maxFrameBytes: number): string {
  const frameOf = (r: NodeInvokeResult) => `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${JSON.stringify(r)}}`;
  let frame = frameOf(result);
  let keep = result.output.length;
  while (Buffer.byteLength(frame) > maxFrameBytes && keep > 0) {
    // Every character dropped takes at least one byte off the frame; the margin pays for the marker.
    keep = Math.max(0, keep - (Buffer.byteLength(frame) - maxFrameBytes) - 128);
    const cut = result.output.slice(0, keep);
    frame = frameOf({
      ...result,
      output: `${cut}\n…[output truncated to fit the gateway's frame limit: ${result.output.length - keep} characters omitted]`,
      truncated: true,
    });
  }
  return frame;
}
