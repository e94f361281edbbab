/*
 * `switchyard serve` following its config file: every save (an editor's save by rename too)
 * and every SIGHUP re-reads it. Live keys go to the engine at once, which applies them to its
 * next decision and announces them (limits.changed, config.reloaded); restart-only keys are
 * logged as waiting for a restart; a bad edit is logged with its path, and the config in force
 * stays.
 */
import { resolve } from 'node:path';
import { watchConfig, type Config, type ConfigChange, type ConfigWatcher } from '../config/index.js';
import type { Logger } from '../telemetry/index.js';

/** Puts a config read from the file in force; answers which keys applied and which wait for a restart. */
export type ApplyConfig = (config: Config) => Promise<{ applied: string[]; restartRequired: string[] }>;

export class ConfigFollower {
  private target: { apply: ApplyConfig; logger: Logger } | undefined;
  /** A change reported before attach(): replayed by it. */
  private early: ConfigChange | undefined;
  private applying: Promise<void> = Promise.resolve();
  private watcher!: ConfigWatcher;

  private constructor(readonly file: string) {}

  /** Starts watching, then reads the file (so an edit in between is not missed). */
  static async start(path: string): Promise<ConfigFollower> {
    const follower = new ConfigFollower(resolve(path));
    follower.watcher = await watchConfig(follower.file, (change) => follower.changed(change));
    return follower;
  }

  /** The config the file held when it was last read successfully. */
  current(): Config {
    return this.watcher.current();
  }

  /** From now on changes go to `apply`, starting with one made since `started` was read. */
  attach(started: Config, apply: ApplyConfig, logger: Logger): void {
    this.target = { apply, logger };
    const early = this.early;
    this.early = undefined;
    if (early && !early.ok) this.changed(early);
    else if (this.current() !== started)
      this.changed({
        ok: true,
        config: this.current(),
        previous: started,
        changed: [],
        applied: [],
        restartRequired: [],
      });
  }

  /** Re-reads the file now; resolves once the result is applied and logged. */
  async reload(): Promise<void> {
    await this.watcher.reload();
    await this.applying;
  }

  close(): void {
    this.watcher.close();
  }

  private changed(change: ConfigChange): void {
    const target = this.target;
    if (!target) {
      this.early = change;
      return;
    }
    this.applying = this.applying.then(() => this.report(change, target));
  }

  private async report(change: ConfigChange, { apply, logger }: { apply: ApplyConfig; logger: Logger }): Promise<void> {
    const file = this.file;
    if (!change.ok) {
      const { code, issues } = change.error;
      logger.error(
        { file, code, issues },
        `config file not applied, the config in force stays: ${change.error.message}`,
      );
      return;
    }
    let result: Awaited<ReturnType<ApplyConfig>>;
    try {
      result = await apply(change.config);
    } catch (error) {
      logger.error(
        { file, err: error },
        `config file ${file} not applied, the config in force stays: ${error instanceof Error ? error.message : String(error)}`,
      );
      return;
    }
    const { applied, restartRequired } = result;
    if (applied.length > 0) logger.info({ file, applied }, `config file ${file}: applied ${applied.join(', ')}`);
    if (restartRequired.length > 0) {
      logger.warn(
        { file, restartRequired },
        `config file ${file}: waiting for a restart: ${restartRequired.join(', ')}`,
      );
    }
    if (applied.length === 0 && restartRequired.length === 0)
      logger.info({ file }, `config file ${file} is valid; nothing changed`);
  }
}
