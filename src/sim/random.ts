/*
 * Seeded randomness for the simulator: mulberry32 streams derived from a seed and a path of
 * labels, so every message of a scenario draws from its own stream — dropping later messages
 * or switching a fault kind off leaves the draws of the others unchanged. Integer arithmetic
 * only (no Math.random, no transcendental functions), so a seed means the same on every run.
 */

/** Mixes 32-bit words into one (murmur3's finalizer over a running hash). */
function mix(words: readonly number[]): number {
  let h = 0x9e3779b9;
  for (const word of words) {
    h = Math.imul(h ^ (word >>> 0), 0x85ebca6b);
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35);
    h ^= h >>> 16;
  }
  return h >>> 0;
}

/** Labels are numbers, or short strings hashed to one (FNV-1a). */
function labelWord(label: number | string): number {
  if (typeof label === 'number') return label >>> 0;
  let h = 0x811c9dc5;
  for (let i = 0; i < label.length; i++) h = Math.imul(h ^ label.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

export class Random {
  private state: number;

  private constructor(state: number) {
    this.state = state >>> 0;
  }

  /** The stream named by `labels` under `seed`: same seed and labels, same draws. */
  static derive(seed: number, ...labels: (number | string)[]): Random {
    return new Random(mix([seed >>> 0, Math.floor(seed / 0x1_0000_0000) >>> 0, ...labels.map(labelWord)]));
  }

  /** A float in [0, 1) (mulberry32). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 0x1_0000_0000;
  }

  /** An integer in [min, max], both included. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  chance(probability: number): boolean {
    return this.next() < probability;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError('Random.pick: no items');
    return items[Math.floor(this.next() * items.length)]!;
  }

  /** A key drawn with probability proportional to its weight (keys in insertion order). */
  weighted<K extends string>(weights: Readonly<Record<K, number>>): K {
    const entries = (Object.entries(weights) as [K, number][]).filter(([, w]) => w > 0);
    const total = entries.reduce((sum, [, w]) => sum + w, 0);
    if (total <= 0) throw new RangeError('Random.weighted: every weight is zero');
    let r = this.next() * total;
    for (const [key, w] of entries) {
      r -= w;
      if (r < 0) return key;
    }
    return entries[entries.length - 1]![0];
  }
}
