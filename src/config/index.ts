export { ConfigSchema, defaultConfig } from './schema.js';
export type { Config, PartialConfig } from './schema.js';
export { ConfigError } from './errors.js';
export type { ConfigErrorCode, ConfigIssue } from './errors.js';
export { parseConfig, parseConfigToml, loadConfig, mergeConfig } from './load.js';
export { diffConfig, HOT_SECTIONS } from './diff.js';
export type { ConfigDiff } from './diff.js';
export { watchConfig } from './watch.js';
export type { ConfigChange, ConfigWatcher, WatchConfigOptions } from './watch.js';
