/*
 * What a run request may ask of the sandbox, checked at admission: less sandbox ("none") only
 * when the operator allowed unsandboxed execution, and a workspace the guard accepts.
 */
import { resolve } from 'node:path';
import type { Config } from '../config/index.js';
import { workspaceRefusal } from './workspace-guard.js';

export interface RequestIssue {
  path: string;
  message: string;
}

export function sandboxRequestIssue(
  request: { workspace?: string | undefined; sandbox?: { backend?: string | undefined } | undefined },
  config: Config,
): RequestIssue | undefined {
  if (request.sandbox?.backend === 'none' && !config.sandbox.allow_unsandboxed) {
    return {
      path: 'sandbox.backend',
      message:
        '"none" (no sandbox) is not allowed: the operator has not set [sandbox] allow_unsandboxed = true; leave it out or ask for "auto" / "bwrap"',
    };
  }
  if (request.workspace === undefined) return undefined;
  const refusal = workspaceRefusal(request.workspace, {
    dataDir: resolve(config.store.dir),
    workspaceRoot: resolve(config.sandbox.workspace_root),
  });
  return refusal === undefined ? undefined : { path: 'workspace', message: refusal };
}
