/*
 * Where the sandbox's directories may lie, checked when a config is read: the data directory
 * (the store and the gateway's token) must never be visible from a workspace, and commands may
 * only run unsandboxed by the operator's explicit choice. Paths are compared after resolving
 * them against the working directory, as the engine resolves them when it uses them.
 */
import { resolve, sep } from 'node:path';

export interface PlacementIssue {
  path: (string | number)[];
  message: string;
}

interface SandboxPlacement {
  backend: 'auto' | 'bwrap' | 'none';
  allow_unsandboxed: boolean;
  workspace_root: string;
  read_only_paths: string[];
}

/** Whether `inner` is `outer` or lies below it; both absolute and resolved. */
export function pathWithin(outer: string, inner: string): boolean {
  if (inner === outer) return true;
  return inner.startsWith(outer.endsWith(sep) ? outer : outer + sep);
}

/** Whether one of two absolute, resolved paths contains the other. */
export function pathsNest(a: string, b: string): boolean {
  return pathWithin(a, b) || pathWithin(b, a);
}

export function sandboxPlacementIssues(sandbox: SandboxPlacement, storeDir: string): PlacementIssue[] {
  const issues: PlacementIssue[] = [];
  const dataDir = resolve(storeDir);
  const workspaceRoot = resolve(sandbox.workspace_root);
  if (sandbox.backend === 'none' && !sandbox.allow_unsandboxed) {
    issues.push({
      path: ['sandbox', 'backend'],
      message:
        '"none" runs commands without any sandbox; set [sandbox] allow_unsandboxed = true to choose that explicitly, or use "auto"',
    });
  }
  if (pathsNest(dataDir, workspaceRoot)) {
    issues.push({
      path: ['sandbox', 'workspace_root'],
      message:
        `${workspaceRoot} overlaps the data directory [store] dir = ${dataDir}, which holds the store ` +
        `and the gateway token; put the workspaces beside it, not inside it`,
    });
  }
  sandbox.read_only_paths.forEach((path, index) => {
    const clash = readOnlyPathClash(resolve(path), dataDir, workspaceRoot);
    if (clash !== undefined)
      issues.push({
        path: ['sandbox', 'read_only_paths', index],
        message: `${resolve(path)} ${clash}; bind a narrower directory`,
      });
  });
  return issues;
}

function readOnlyPathClash(path: string, dataDir: string, workspaceRoot: string): string | undefined {
  if (path === sep) return 'is the whole file system';
  if (pathsNest(dataDir, path)) return `overlaps the data directory ${dataDir}`;
  if (pathsNest(workspaceRoot, path))
    return `overlaps the workspace root ${workspaceRoot} (other sessions' workspaces)`;
  return undefined;
}
