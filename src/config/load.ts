/* Reading a config: validation of plain values, TOML text and files, and merging partials. */
import { readFile } from 'node:fs/promises';
import { parse as parseToml, TomlError } from 'smol-toml';
import { ConfigError } from './errors.js';
import { configIssuesFromZod } from './issues.js';
import { ConfigSchema } from './schema.js';
import type { Config, PartialConfig } from './schema.js';

/** Validates a value in the TOML vocabulary and fills in every default. */
export function parseConfig(input: unknown, source?: string): Config {
  // reportInput puts the offending value into each issue, so messages can show it.
  const result = ConfigSchema.safeParse(input, { reportInput: true });
  if (result.success) return result.data;
  throw new ConfigError('invalid_config', configIssuesFromZod(result.error, ConfigSchema), source);
}

/** Parses TOML text; `source` names the text in errors (usually its file). */
export function parseConfigToml(text: string, source = '<toml>'): Config {
  let document: unknown;
  try {
    document = parseToml(text);
  } catch (err) {
    if (!(err instanceof TomlError)) throw err;
    const reason = err.message.split('\n')[0]?.replace(/^Invalid TOML document: /, '') ?? err.message;
    const issue = { path: source, message: `line ${err.line}, column ${err.column}: ${reason}` };
    throw new ConfigError('toml_syntax', [issue], source);
  }
  return parseConfig(document, source);
}

function errnoCode(err: unknown): string | undefined {
  return err instanceof Error && 'code' in err && typeof err.code === 'string' ? err.code : undefined;
}

export async function loadConfig(path: string): Promise<Config> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') {
      const message = 'file does not exist; create it or point --config at an existing file';
      throw new ConfigError('file_not_found', [{ path, message }], path);
    }
    const reason = err instanceof Error ? err.message : String(err);
    throw new ConfigError('file_unreadable', [{ path, message: reason }], path);
  }
  return parseConfigToml(text, path);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

// Tables (and records such as approval.tools) merge key by key; arrays and scalars replace.
function deepMerge(base: unknown, patch: unknown): unknown {
  if (patch === undefined) return base;
  if (!isPlainObject(base) || !isPlainObject(patch)) return patch;
  // A prototype-less copy, so a "__proto__" key in the patch stays a plain (and rejected) key.
  const merged: Record<string, unknown> = Object.assign(Object.create(null), base);
  for (const [key, value] of Object.entries(patch)) {
    merged[key] = deepMerge(base[key], value);
  }
  return merged;
}

/** Returns a new, validated config; `base` is never modified, even when the partial is bad. */
export function mergeConfig(base: Config, partial: PartialConfig): Config {
  return parseConfig(deepMerge(base, partial));
}
