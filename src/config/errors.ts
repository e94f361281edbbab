/* The one error type of the config area: every problem found, each named by its key path. */

export type ConfigErrorCode = 'invalid_config' | 'toml_syntax' | 'file_not_found' | 'file_unreadable' | 'watch_failed';

const HEADLINES: Record<ConfigErrorCode, string> = {
  invalid_config: 'invalid Switchyard config',
  toml_syntax: 'Switchyard config is not valid TOML',
  file_not_found: 'Switchyard config file does not exist',
  file_unreadable: 'Switchyard config file cannot be read',
  watch_failed: 'Switchyard stopped watching its config file',
};

export interface ConfigIssue {
  /** Dotted key path in the TOML vocabulary (`execution.max_runs_global`), or the file name. */
  path: string;
  message: string;
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly code: ConfigErrorCode;
  readonly issues: ConfigIssue[];
  /** The file the config came from, when there was one. */
  readonly source: string | undefined;

  constructor(code: ConfigErrorCode, issues: ConfigIssue[], source?: string) {
    const lines = issues.map((i) => `  ${i.path}: ${i.message}`);
    const where = source === undefined ? '' : ` (${source})`;
    super([`${HEADLINES[code]}${where}:`, ...lines].join('\n'));
    this.code = code;
    this.issues = issues;
    this.source = source;
  }
}
