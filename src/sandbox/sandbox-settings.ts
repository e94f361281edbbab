/* How a run's commands run: [sandbox] of the config with the request's override, as the tools see it. */
import { resolve } from 'node:path';
import type { Config } from '../config/index.js';
import type { CommandLimits } from './command-limits.js';
import type { UnixUser, WorkspaceOwners } from './command-user.js';

export interface SandboxSettings {
  backend: 'auto' | 'bwrap' | 'none';
  network: boolean;
  maxOutputBytes: number;
  /** [sandbox] default_timeout_seconds, in ms. */
  commandTimeoutMs: number;
  /** [sandbox] allow_unsandboxed: commands may run without bubblewrap. Default false. */
  allowUnsandboxed?: boolean;
  /** [sandbox] max_processes, max_memory_bytes, max_file_bytes. Default: their defaults. */
  limits?: CommandLimits;
  /** [sandbox] bwrap_path. Default "bwrap". */
  bwrapPath?: string;
  /** [sandbox] read_only_paths. */
  readOnlyPaths?: readonly string[];
  /** The data directory (store, token): no workspace may contain it or lie inside it. */
  dataDir?: string;
  /** [sandbox] workspace_root: a workspace may lie inside it, not contain it. */
  workspaceRoot?: string;
  /** [sandbox] unprivileged_uid / unprivileged_gid, for a server running as root. */
  unprivileged?: UnixUser;
  /** [sandbox] client_workspaces: whose directories may be a workspace. Default "sandbox_user". */
  clientWorkspaces?: WorkspaceOwners;
}

export interface SandboxRequest {
  backend?: 'auto' | 'bwrap' | 'none' | undefined;
  network?: boolean | undefined;
}

export function sandboxSettings(config: Config, request: SandboxRequest | undefined): SandboxSettings {
  const sandbox = config.sandbox;
  return {
    backend: request?.backend ?? sandbox.backend,
    network: request?.network ?? sandbox.network,
    maxOutputBytes: sandbox.max_output_bytes,
    commandTimeoutMs: sandbox.default_timeout_seconds * 1000,
    allowUnsandboxed: sandbox.allow_unsandboxed,
    limits: {
      maxProcesses: sandbox.max_processes,
      maxMemoryBytes: sandbox.max_memory_bytes,
      maxFileBytes: sandbox.max_file_bytes,
    },
    bwrapPath: sandbox.bwrap_path,
    readOnlyPaths: sandbox.read_only_paths,
    dataDir: resolve(config.store.dir),
    workspaceRoot: resolve(sandbox.workspace_root),
    unprivileged: { uid: sandbox.unprivileged_uid, gid: sandbox.unprivileged_gid },
    clientWorkspaces: sandbox.client_workspaces,
  };
}
