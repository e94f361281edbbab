/*
 * The config in effect after a reload: the hot sections come from the new config, every other
 * key keeps its current value until a restart. diffConfig reports those keys as
 * restartRequired; this makes that report true.
 */
import { HOT_SECTIONS } from './diff.js';
import type { Config } from './schema.js';

type Table = Record<string, unknown>;

export function appliedConfig(current: Config, next: Config): Config {
  const applied = structuredClone(current) as unknown as Table;
  for (const section of HOT_SECTIONS) {
    const keys = section.split('.');
    const last = keys.pop() as string;
    let into = applied;
    let from = next as unknown as Table;
    for (const key of keys) {
      into = into[key] as Table;
      from = from[key] as Table;
    }
    into[last] = structuredClone(from[last]);
  }
  return applied as unknown as Config;
}
