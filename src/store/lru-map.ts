/*
 * A Map that forgets its least recently used entries beyond a capacity — except those
 * `canEvict` refuses (e.g. data whose write has not landed yet), which stay until it agrees.
 * A refused entry goes to the back of the line, so each set() looks at a few entries however
 * many are refused (thousands of queued runs must not make every save scan them all).
 */

/** Entries a set() looks at for eviction: enough to keep up when most of them can go. */
const EVICTION_SCAN = 8;
export class LruMap<K, V> {
  private readonly map = new Map<K, V>();

  constructor(
    private readonly capacity: number,
    private readonly canEvict: (value: V) => boolean = () => true,
  ) {}

  get size(): number {
    return this.map.size;
  }

  get(key: K): V | undefined {
    const value = this.map.get(key);
    if (value !== undefined) {
      this.map.delete(key);
      this.map.set(key, value);
    }
    return value;
  }

  /** Reads without counting as a use. */
  peek(key: K): V | undefined {
    return this.map.get(key);
  }

  set(key: K, value: V): void {
    this.map.delete(key);
    this.map.set(key, value);
    this.evict(EVICTION_SCAN);
  }

  delete(key: K): void {
    this.map.delete(key);
  }

  values(): IterableIterator<V> {
    return this.map.values();
  }

  /** Evicts what it may until the map is within capacity (also after `canEvict` changes its mind). */
  trim(): void {
    this.evict(this.map.size);
  }

  /** Looks at up to `budget` entries, oldest first: each goes, or (refused) moves to the back. */
  private evict(budget: number): void {
    for (let looked = 0; looked < budget && this.map.size > this.capacity; looked++) {
      const oldest = this.map.entries().next();
      if (oldest.done === true) return;
      const [key, value] = oldest.value;
      this.map.delete(key);
      if (!this.canEvict(value)) this.map.set(key, value);
    }
  }
}
