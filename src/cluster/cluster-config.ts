/*
 * config.update in a cluster: the hot sections of the config as last changed, kept in Redis
 * with a version, so every process applies the same change — at once when it is told, at its
 * next lease renewal when the message was lost, and at start when it joins later.
 */
import type { Redis } from 'ioredis';
import { HOT_SECTIONS, type Config, type PartialConfig } from '../config/index.js';
import type { ClusterKeys } from './cluster-keys.js';

export class ClusterConfig {
  /** The version this process applied last. */
  applied = 0;

  constructor(
    private readonly client: Redis,
    private readonly keys: ClusterKeys,
  ) {}

  /** Stores the hot sections of `config` as the cluster's; returns the new version. */
  async publish(config: Config): Promise<number> {
    const key = this.keys.config();
    const [[, version]] = (await this.client
      .multi()
      .incr(`${key}:version`)
      .set(key, JSON.stringify(hotSectionsOf(config)))
      .exec()) as [[null, number]];
    this.applied = version;
    return version;
  }

  /** The cluster's hot sections when they are newer than what this process applied. */
  async newer(): Promise<{ version: number; partial: PartialConfig } | undefined> {
    const key = this.keys.config();
    const [version, json] = await this.client.mget(`${key}:version`, key);
    if (version == null || json == null || Number(version) <= this.applied) return undefined;
    return { version: Number(version), partial: JSON.parse(json) as PartialConfig };
  }
}

function hotSectionsOf(config: Config): PartialConfig {
  const partial: Record<string, unknown> = {};
  for (const section of HOT_SECTIONS) {
    const path = section.split('.');
    let from: unknown = config;
    let into = partial;
    path.forEach((key, i) => {
      from = (from as Record<string, unknown>)[key];
      if (i === path.length - 1) into[key] = structuredClone(from);
      else into = (into[key] ??= {}) as Record<string, unknown>;
    });
  }
  return partial as PartialConfig;
}
