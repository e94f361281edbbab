/*
 * Hot reload: watches the config file and reports each effective change, keeping the last good
 * config when an edit is invalid.
 */
import { watch } from 'node:fs';
import type { FSWatcher } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { diffConfig } from './diff.js';
import { ConfigError } from './errors.js';
import { loadConfig } from './load.js';
import type { Config } from './schema.js';

export type ConfigChange =
  | {
      ok: true;
      config: Config;
      previous: Config;
      changed: string[];
      applied: string[];
      restartRequired: string[];
    }
  | { ok: false; error: ConfigError; /** the last good config, still in force */ config: Config };

export interface ConfigWatcher {
  current(): Config;
  /** Re-reads the file now (a SIGHUP, or a change the watch cannot see); resolves once it is reported. */
  reload(): Promise<void>;
  close(): void;
}

export interface WatchConfigOptions {
  /** Quiet time after the last file event before re-reading; editors write in bursts. Default 100. */
  debounceMs?: number;
  /** The config already in force; when absent the file is read once before watching starts. */
  initial?: Config;
}

// The directory, not the file: a save that renames a temp file over the config replaces the
// inode, and a watch on the old inode would never fire again.
function watchDirectoryOf(file: string, onEvent: (name: string | null) => void): FSWatcher {
  try {
    return watch(dirname(file), (_event, name) => onEvent(name));
  } catch (err) {
    if (err instanceof Error && 'code' in err && err.code === 'ENOENT') {
      const issue = { path: file, message: 'file does not exist, nor does its directory' };
      throw new ConfigError('file_not_found', [issue], file);
    }
    const reason = err instanceof Error ? err.message : String(err);
    throw new ConfigError('watch_failed', [{ path: file, message: `cannot watch its directory: ${reason}` }], file);
  }
}

export async function watchConfig(
  path: string,
  onChange: (change: ConfigChange) => void,
  opts: WatchConfigOptions = {},
): Promise<ConfigWatcher> {
  const file = resolve(path);
  const name = basename(file);
  const debounceMs = opts.debounceMs ?? 100;
  // Assigned by the initial read, the first link of `queue`; every reload is chained after it.
  let current!: Config;
  let closed = false;
  let failing = false;
  let timer: NodeJS.Timeout | undefined;

  const emit = (change: ConfigChange): void => {
    if (!closed) onChange(change);
  };

  const reload = async (): Promise<void> => {
    if (closed) return;
    let next: Config;
    try {
      next = await loadConfig(file);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      failing = true;
      emit({ ok: false, error: err, config: current });
      return;
    }
    const diff = diffConfig(current, next);
    // After a bad edit, a fix back to the same config is still news: the error is over.
    const recovered = failing;
    failing = false;
    const previous = current;
    // An unchanged config keeps its identity, so holders can compare by reference.
    if (diff.changed.length > 0) current = next;
    if (diff.changed.length > 0 || recovered) emit({ ok: true, config: current, previous, ...diff });
  };

  let queue: Promise<void> = Promise.resolve();
  const enqueue = (): Promise<void> => {
    queue = queue.then(reload).catch((err: unknown) => {
      // A throwing listener must not stop the watcher; surface it the way an EventEmitter would.
      setImmediate(() => {
        throw err;
      });
    });
    return queue;
  };
  const schedule = (): void => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      void enqueue();
    }, debounceMs);
  };

  // Watching starts before the first read, so an edit made in between is not missed.
  const watcher = watchDirectoryOf(file, (changed) => {
    if (changed === null || changed === name) schedule();
  });
  watcher.on('error', (err) => {
    const issue = { path: file, message: `${err.message}; restart to resume hot reload` };
    emit({ ok: false, error: new ConfigError('watch_failed', [issue], file), config: current });
  });

  const close = (): void => {
    closed = true;
    clearTimeout(timer);
    watcher.close();
  };

  queue = (opts.initial !== undefined ? Promise.resolve(opts.initial) : loadConfig(file)).then((config) => {
    current = config;
  });
  try {
    await queue;
  } catch (err) {
    close();
    throw err;
  }
  return { current: () => current, reload: enqueue, close };
}
