/* The sandbox settings of a run's tool calls: [sandbox] of the config, with the request's override. */
import { resolve } from 'node:path';
import type { Config } from '../config/index.js';
import type { SandboxSettings } from '../tools/tool.js';

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
    limits: { maxProcesses: sandbox.max_processes, maxMemoryBytes: sandbox.max_memory_bytes, maxFileBytes: sandbox.max_file_bytes },
    bwrapPath: sandbox.bwrap_path,
    readOnlyPaths: sandbox.read_only_paths,
    dataDir: resolve(config.store.dir),
    workspaceRoot: resolve(sandbox.workspace_root),
    unprivileged: { uid: sandbox.unprivileged_uid, gid: sandbox.unprivileged_gid },
  };
}
