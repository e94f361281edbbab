/* Which keys changed between two configs, and which of them apply without a restart. */
import type { Config } from './schema.js';

/**
 * Sections the engine reads at each decision, so a reload applies to the next one (the
 * "applies" column of the README's configuration table is drawn from this list).
 */
export const HOT_SECTIONS = ['execution', 'tool_service', 'approval', 'sandbox.command_policy'] as const;

// Tables keyed by user-chosen names: a change anywhere inside is reported as the whole table.
const RECORD_PATHS: ReadonlySet<string> = new Set(['approval.tools', 'models', 'mcp']);

export interface ConfigDiff {
  /** Dotted paths of the leaf keys (or whole records) that differ. */
  changed: string[];
  applied: string[];
  restartRequired: string[];
}

function isTable(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Structural equality of parsed TOML values; key order does not matter. */
function sameValue(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((item, i) => sameValue(item, b[i]));
  }
  if (isTable(a) && isTable(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && sameValue(a[k], b[k]));
  }
  return false;
}

function collectChanges(prev: unknown, next: unknown, path: string, out: string[]): void {
  if (isTable(prev) && isTable(next) && !RECORD_PATHS.has(path)) {
    const keys = new Set([...Object.keys(prev), ...Object.keys(next)]);
    for (const key of keys) {
      collectChanges(prev[key], next[key], path === '' ? key : `${path}.${key}`, out);
    }
  } else if (!sameValue(prev, next)) {
    out.push(path);
  }
}

function isHotPath(path: string): boolean {
  return HOT_SECTIONS.some((section) => path === section || path.startsWith(`${section}.`));
}

export function diffConfig(prev: Config, next: Config): ConfigDiff {
  const changed: string[] = [];
  collectChanges(prev, next, '', changed);
  return {
    changed,
    applied: changed.filter(isHotPath),
    restartRequired: changed.filter((path) => !isHotPath(path)),
  };
}
