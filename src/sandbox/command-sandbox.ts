/*
 * From a tool call's sandbox settings to how its command runs: the workspace must pass the
 * guard, and "none" is refused unless the operator allowed unsandboxed execution.
 */
import type { SandboxSettings } from './sandbox-settings.js';
import { ToolError } from '../core/errors.js';
import type { RunCommandOptions } from './run-command.js';
import { assertWorkspaceAllowed } from './workspace-guard.js';

export type CommandSandboxOptions = Pick<
  RunCommandOptions,
  | 'backend'
  | 'network'
  | 'allowUnsandboxed'
  | 'limits'
  | 'bwrapPath'
  | 'readOnlyPaths'
  | 'unprivileged'
  | 'workspaceOwners'
  | 'workspace'
>;

/** Without settings (a tool called outside an engine): bubblewrap, no network, nothing unsandboxed. */
export async function commandSandbox(
  settings: SandboxSettings | undefined,
  workspace: string,
): Promise<CommandSandboxOptions> {
  const backend = settings?.backend ?? 'auto';
  if (backend === 'none' && settings?.allowUnsandboxed !== true) {
    throw new ToolError(
      'invalid_request',
      'sandbox backend "none" runs the command without any sandbox, which only [sandbox] allow_unsandboxed = true permits; use "auto" or "bwrap"',
    );
  }
  await assertWorkspaceAllowed(workspace, settings ?? {});
  return {
    backend,
    network: settings?.network ?? false,
    allowUnsandboxed: settings?.allowUnsandboxed ?? false,
    workspace,
    ...(settings?.limits !== undefined ? { limits: settings.limits } : {}),
    ...(settings?.bwrapPath !== undefined ? { bwrapPath: settings.bwrapPath } : {}),
    ...(settings?.readOnlyPaths !== undefined ? { readOnlyPaths: settings.readOnlyPaths } : {}),
    ...(settings?.unprivileged !== undefined ? { unprivileged: settings.unprivileged } : {}),
    ...(settings?.clientWorkspaces !== undefined ? { workspaceOwners: settings.clientWorkspaces } : {}),
  };
}
