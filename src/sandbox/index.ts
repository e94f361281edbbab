export {
  evaluateCommand,
  formatVerdict,
  FLOOR_RULES,
  TUNABLE_RULES,
  TOO_COMPLEX_RULE,
  UNPARSEABLE_RULE,
} from './command-policy/index.js';
export type {
  CommandAction,
  CommandEnforcement,
  CommandPolicy,
  CommandRule,
  CommandVerdict,
  OperatorRule,
} from './command-policy/index.js';
export { runCommand } from './run-command.js';
export type { CommandResult, RunCommandOptions, SandboxBackend } from './run-command.js';
export { bwrapAvailable, bwrapArgs, probeBwrap } from './bwrap.js';
export type { BwrapProbe } from './bwrap.js';
export { DEFAULT_COMMAND_LIMITS } from './command-limits.js';
export type { CommandLimits } from './command-limits.js';
export { commandEnvironment } from './command-environment.js';
export { sandboxSettings } from './sandbox-settings.js';
export { commandUser, makeWorkspace, workspaceOwnerOptions } from './command-user.js';
export type { UnixUser, WorkspaceOwners } from './command-user.js';
export { assertWorkspaceAllowed, workspaceRefusal } from './workspace-guard.js';
export { WorkspaceDir } from './workspace-dir.js';
export { resolveInWorkspace, workspaceClaimPath, workspaceRelative } from './workspace-scope.js';
