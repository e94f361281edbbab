/*
 * The `bash` builtin: one shell command in the run's workspace, through the sandboxed command
 * runner. Its claim is derived from the command (docs/bash-claims.md): read-only commands share,
 * known file effects claim their paths, anything else is global.
 */
import path from 'node:path';
import { z } from 'zod';
import { Claims, type Claim } from '../../concurrency/index.js';
import { deriveCommandClaim } from '../../sandbox/command-policy/command-claims.js';
import { commandSandbox } from '../../sandbox/command-sandbox.js';
import { runCommand } from '../../sandbox/run-command.js';
import { defineTool, ToolError } from '../tool.js';
import type { ClaimContext } from '../../concurrency/index.js';
import type { ToolContext } from '../tool.js';

const DEFAULT_TIMEOUT_MS = 60_000;
const DEFAULT_MAX_OUTPUT_BYTES = 1_048_576;

export const bashInput = z.object({
  command: z.string().min(1),
  /** Relative to the workspace; must stay inside it. */
  cwd: z.string().optional(),
  timeoutMs: z.number().int().positive().optional(),
});
export type BashInput = z.infer<typeof bashInput>;

export const bashTool = defineTool<BashInput>({
  name: 'bash',
  description:
    'Run a shell command in the workspace. Returns the exit code and the combined stdout/stderr output. ' +
    'Optional cwd (relative to the workspace) and timeoutMs.',
  input: bashInput,
  concurrencyClaim: bashClaim,
  commandOf: (input) => input.command,
  // Run again only what its derived claim says reads and changes nothing.
  replay: (input, ctx) => (bashClaim(input, ctx).kind === 'shared' ? 'safe' : 'unsafe'),
  async execute(input, ctx) {
    const workspace = path.resolve(ctx.workspace);
    const result = await runCommand({
      command: input.command,
      cwd: workspaceCwd(workspace, input.cwd),
      // `git status` refreshes the index when it can; without that it only reads, as its claim says.
      env: { GIT_OPTIONAL_LOCKS: '0' },
      timeoutMs: bashTimeoutMs(input, ctx),
      signal: ctx.signal,
      maxOutputBytes: ctx.sandbox?.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES,
      ...(await commandSandbox(ctx.sandbox, workspace)),
      onWarning: (message) => ctx.warn?.(message),
    });
    if (result.cancelled) throw new ToolError('cancelled', 'the command was cancelled');
    if (result.timedOut) {
      const partial = result.output.trim();
      throw new ToolError(
        'timeout',
        `the command timed out after ${result.durationMs} ms and was killed` +
          (partial === '' ? ' (no output)' : `; output so far:\n${partial}`),
      );
    }
    const { exitCode, signal, output, truncated, timedOut, durationMs, sandbox } = result;
    return { exitCode, signal, output, truncated, timedOut, durationMs, sandbox };
  },
});

/** The claim derived from the command, run where `cwd` says; a cwd outside the workspace fails later, so claim everything. */
export function bashClaim(input: BashInput, ctx: ClaimContext): Claim {
  const workspace = path.resolve(ctx.workspace);
  const cwd = path.resolve(workspace, input.cwd ?? '.');
  if (cwd !== workspace && !cwd.startsWith(workspace + path.sep)) return Claims.global();
  return deriveCommandClaim(input.command, { workspace, cwd });
}

/** A lexical check only; symlink-aware workspace scope is the file tools' business. */
function workspaceCwd(workspace: string, cwd: string | undefined): string {
  const resolved = path.resolve(workspace, cwd ?? '.');
  if (resolved !== workspace && !resolved.startsWith(workspace + path.sep)) {
    throw new ToolError('outside_workspace', `cwd ${JSON.stringify(cwd)} resolves outside the workspace ${workspace}`);
  }
  return resolved;
}

/** The smallest of the call's own, the [sandbox] per-command and the tool-call timeouts. */
export function bashTimeoutMs(
  input: Pick<BashInput, 'timeoutMs'>,
  ctx: Pick<ToolContext, 'sandbox' | 'timeoutMs'>,
): number {
  const limits = [input.timeoutMs, ctx.sandbox?.commandTimeoutMs, ctx.timeoutMs].filter(
    (limit): limit is number => limit !== undefined,
  );
  return limits.length === 0 ? DEFAULT_TIMEOUT_MS : Math.min(...limits);
}
