/*
 * A workspace opened for one tool call, and paths in it resolved without the kernel ever
 * following a symlink: each component is opened through /proc/self/fd/<dir>/<name> with
 * O_NOFOLLOW, relative to the directory opened one step before (Node has no openat; the proc
 * link resolves to that open directory itself, wherever it is now). A symlink met on the way
 * is read and resolved here, inside the workspace, or refused. A symlink swapped in at any
 * moment is therefore only ever met, never followed out: checking a path and using it are
 * one step (docs/sandbox.md, "File tools").
 */
import { constants, type Stats } from 'node:fs';
import { lchown, lstat, mkdir, open, readlink, type FileHandle } from 'node:fs/promises';
import { posix, relative, resolve, sep } from 'node:path';
import { pathWithin } from '../config/sandbox-placement.js';
import type { SandboxSettings } from './sandbox-settings.js';
import { ToolError } from '../core/errors.js';
import type { UnixUser } from './command-user.js';
import { commandUser, makeWorkspace, workspaceOwnerOptions } from './command-user.js';
import { assertWorkspaceAllowed } from './workspace-guard.js';

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW } = constants;
export const DIRECTORY_FLAGS = O_RDONLY | O_DIRECTORY | O_NOFOLLOW;
/** The same bound as the kernel's: a longer chain of links is a loop. */
const MAX_SYMLINK_HOPS = 40;
/** How often an entry that changed while it was being opened is tried again. */
const RACE_RETRIES = 40;

/** An open directory of the workspace and its path relative to the workspace root. */
export class OpenDir {
  constructor(
    readonly handle: FileHandle,
    /** Components from the workspace root; empty for the root. */
    readonly relative: readonly string[],
    private readonly owned: boolean,
  ) {}

  /** The path that names `name` inside this very directory, whatever has happened to its path since. */
  entry(name: string): string {
    return `/proc/self/fd/${this.handle.fd}/${name}`;
  }

  /** The path of the directory itself, for readdir. */
  get self(): string {
    return `/proc/self/fd/${this.handle.fd}`;
  }

  async release(): Promise<void> {
    if (this.owned) await this.handle.close();
  }
}

/** Where a path led: the open directory holding the entry and the entry's name (none: the workspace root). */
export interface Located {
  dir: OpenDir;
  name: string | undefined;
  /** The entry's path relative to the workspace, symlinks resolved ('' for the root). */
  relative: string;
}

export interface LocateOptions {
  /** Resolve a symlink in the last position too (false: the entry is the link itself). */
  follow: boolean;
  /** Create missing parent directories. */
  createParents?: boolean;
}

export function errorCode(error: unknown): unknown {
  return (error as { code?: unknown } | null)?.code;
}

export class WorkspaceDir {
  private readonly rootDir: OpenDir;

  private constructor(
    root: FileHandle,
    /** The workspace as given (the tools' paths are relative to it). */
    readonly path: string,
    /** Where the workspace really is (symlinks in its own path resolved). */
    readonly realPath: string,
    /** For a server running as root: who gets what the tools create. */
    private readonly owner: UnixUser | undefined,
  ) {
    this.rootDir = new OpenDir(root, [], false);
  }

  /** Opens the workspace of a tool call (creating it if missing) after checking it may be one. */
  static async open(workspace: string, settings?: SandboxSettings): Promise<WorkspaceDir> {
    if (process.platform !== 'linux') {
      throw new ToolError(
        'sandbox_unavailable',
        'the file tools need Linux: they open paths through /proc/self/fd so that no symlink is ever followed',
      );
    }
    const path = resolve(workspace);
    if (settings?.dataDir !== undefined || settings?.workspaceRoot !== undefined)
      await assertWorkspaceAllowed(path, settings);
    // The workspace's own path is the operator's; only what lies below it is checked.
    const root = await open(path, O_RDONLY | O_DIRECTORY).catch(async (error: unknown) => {
      if (errorCode(error) !== 'ENOENT') throw error;
      await makeWorkspace(path, workspaceOwnerOptions(settings));
      return open(path, O_RDONLY | O_DIRECTORY);
    });
    try {
      const realPath = await readlink(`/proc/self/fd/${root.fd}`);
      if (realPath === sep)
        throw new ToolError(
          'invalid_request',
          'workspace refused: the file-system root cannot be a workspace; name a project directory',
        );
      // Checked on the open directory: the one the tools will use, whatever its path names by now.
      const owner =
        settings === undefined
          ? undefined
          : await commandUser(path, workspaceOwnerOptions(settings), `/proc/self/fd/${root.fd}`);
      return new WorkspaceDir(root, path, realPath, owner);
    } catch (error) {
      await root.close();
      throw error;
    }
  }

  /** Opens the workspace, runs `use`, and closes it whatever happens. */
  static async with<T>(
    workspace: string,
    settings: SandboxSettings | undefined,
    use: (dir: WorkspaceDir) => Promise<T>,
  ): Promise<T> {
    const dir = await WorkspaceDir.open(workspace, settings);
    try {
      return await use(dir);
    } finally {
      await dir.close();
    }
  }

  async close(): Promise<void> {
    await this.rootDir.handle.close();
  }

  /** Components of `path` below the workspace, `..` resolved lexically; refuses a path that leaves it. */
  components(path: string): string[] {
    const absolute = resolve(this.path, path);
    for (const base of [this.path, this.realPath]) {
      if (pathWithin(base, absolute))
        return relative(base, absolute)
          .split(sep)
          .filter((part) => part !== '');
    }
    throw new ToolError('outside_workspace', `${path} resolves to ${absolute}, outside the workspace ${this.path}`);
  }

  /**
   * Finds the entry `path` names. Directories on the way are opened without following links;
   * a link on the way (or in the last position, with `follow`) is resolved here and must stay
   * inside the workspace. The caller releases `dir`.
   */
  async locate(path: string, options: LocateOptions): Promise<Located> {
    let parts = this.components(path);
    for (let hops = 0; ; hops++) {
      if (hops > MAX_SYMLINK_HOPS) throw new ToolError('symlink_loop', `${path}: too many levels of symbolic links`);
      const last = parts.at(-1);
      if (last === undefined) return { dir: this.rootDir, name: undefined, relative: '' };
      const walked = await this.walk(parts.slice(0, -1), options.createParents === true, path);
      if (walked.kind === 'link') {
        parts = [...walked.parts, last];
        continue;
      }
      const dir = walked.dir;
      const located = { dir, name: last, relative: [...dir.relative, last].join('/') };
      if (!options.follow) return located;
      const target = await this.linkAt(dir, last);
      if (target === undefined) return located;
      await dir.release();
      parts = this.linkTarget(dir.relative, target, path);
    }
  }

  /**
   * The path relative to the workspace that `path` leads to, symlinks resolved as far as the
   * path exists (the missing rest is appended as written). For keys, not for I/O: by the time
   * it is used, anything may have changed, so I/O resolves again.
   */
  async canonical(path: string): Promise<string> {
    const parts = this.components(path);
    const missing: string[] = [];
    for (;;) {
      try {
        const located = await this.locate(parts.join('/') || '.', { follow: true });
        await located.dir.release();
        return [located.relative, ...missing].filter((part) => part !== '').join('/');
      } catch (error) {
        const last = parts.pop();
        if (errorCode(error) !== 'ENOENT' || last === undefined) throw error;
        missing.unshift(last);
      }
    }
  }

  /** The entry's lstat, or undefined when it does not exist. */
  async lstatEntry(dir: OpenDir, name: string): Promise<Stats | undefined> {
    try {
      return await lstat(dir.entry(name));
    } catch (error) {
      if (errorCode(error) === 'ENOENT') return undefined;
      throw error;
    }
  }

  /** What the link `dir/name` says, or undefined when that entry is not a link (any more) or is gone. */
  async linkAt(dir: OpenDir, name: string): Promise<string | undefined> {
    try {
      return await readlink(dir.entry(name));
    } catch (error) {
      const code = errorCode(error);
      if (code === 'EINVAL' || code === 'ENOENT') return undefined;
      throw error;
    }
  }

  /**
   * Opens the directory `dir/name` without following a link. A link found there is resolved
   * (inside the workspace) and the returned value says where it led instead. An entry that
   * changes between the open and the look at what it is (a swap in progress) is tried again.
   */
  async openChild(dir: OpenDir, name: string, shown: string): Promise<OpenDir | { parts: string[] }> {
    for (let attempt = 0; ; attempt++) {
      try {
        return new OpenDir(await open(dir.entry(name), DIRECTORY_FLAGS), [...dir.relative, name], true);
      } catch (error) {
        const code = errorCode(error);
        if (code !== 'ELOOP' && code !== 'ENOTDIR') throw error;
        const target = await this.linkAt(dir, name);
        if (target !== undefined) return { parts: this.linkTarget(dir.relative, target, shown) };
        const info = await this.lstatEntry(dir, name);
        const changed = info === undefined || info.isDirectory() || info.isSymbolicLink();
        if (!changed || attempt >= RACE_RETRIES) throw error;
      }
    }
  }

  /** Gives a new entry to the workspace's owner when the server runs as root. */
  async adopt(dir: OpenDir, name: string): Promise<void> {
    if (this.owner !== undefined) await lchown(dir.entry(name), this.owner.uid, this.owner.gid);
  }

  async adoptHandle(handle: FileHandle): Promise<void> {
    if (this.owner !== undefined) await handle.chown(this.owner.uid, this.owner.gid);
  }

  /**
   * Checks through the descriptor that what was opened lies in the workspace now: the walk
   * already never left it, this also catches a directory moved out from under us by someone
   * outside the sandbox.
   */
  async assertInside(handle: FileHandle, shown: string): Promise<void> {
    const where = await readlink(`/proc/self/fd/${handle.fd}`);
    if (!pathWithin(this.realPath, where.replace(/ \(deleted\)$/, ''))) {
      throw new ToolError('outside_workspace', `${shown} is now at ${where}, outside the workspace ${this.path}`);
    }
  }

  /** Opens `parts` as nested directories from the root, or says which link to follow instead. */
  private async walk(
    parts: readonly string[],
    create: boolean,
    shown: string,
  ): Promise<{ kind: 'dir'; dir: OpenDir } | { kind: 'link'; parts: string[] }> {
    let dir = this.rootDir;
    for (let index = 0; index < parts.length; index++) {
      const name = parts[index] as string;
      let child: OpenDir | { parts: string[] };
      try {
        child = await this.openChild(dir, name, shown);
      } catch (error) {
        if (!create || errorCode(error) !== 'ENOENT') {
          await dir.release();
          throw error;
        }
        await this.makeDirectory(dir, name);
        index -= 1;
        continue;
      }
      await dir.release();
      if (!(child instanceof OpenDir)) return { kind: 'link', parts: [...child.parts, ...parts.slice(index + 1)] };
      dir = child;
    }
    return { kind: 'dir', dir };
  }

  /** mkdir of `dir/name`; an entry that appeared meanwhile is fine (the walk opens it next). */
  async makeDirectory(dir: OpenDir, name: string): Promise<boolean> {
    try {
      await mkdir(dir.entry(name));
    } catch (error) {
      if (errorCode(error) === 'EEXIST') return false;
      throw error;
    }
    await this.adopt(dir, name);
    return true;
  }

  /** Where a link in the directory `from` that says `target` leads, as components from the root. */
  private linkTarget(from: readonly string[], target: string, shown: string): string[] {
    if (target.startsWith('/')) {
      const absolute = resolve(target);
      for (const base of [this.realPath, this.path]) {
        if (pathWithin(base, absolute))
          return relative(base, absolute)
            .split(sep)
            .filter((part) => part !== '');
      }
      throw new ToolError(
        'outside_workspace',
        `${shown} leads through a symlink to ${absolute}, outside the workspace ${this.path}`,
      );
    }
    const joined = posix.normalize([...from, target].join('/'));
    if (joined === '..' || joined.startsWith('../')) {
      throw new ToolError(
        'outside_workspace',
        `${shown} leads through a symlink to ${target}, outside the workspace ${this.path}`,
      );
    }
    return joined === '.' ? [] : joined.split('/').filter((part) => part !== '');
  }
}
