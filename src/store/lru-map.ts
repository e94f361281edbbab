/*
 * A Map that forgets its least recently used entries beyond a capacity — except those
 * `canEvict` refuses (e.g. data whose write has not landed yet), which stay until it agrees.
 */
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
    this.trim();
  }

  delete(key: K): void {
    this.map.delete(key);
  }

  values(): IterableIterator<V> {
    return this.map.values();
  }

  /** Evicts what it may until the map is within capacity (also after `canEvict` changes its mind). */
  trim(): void {
    if (this.map.size <= this.capacity) return;
    for (const [key, value] of this.map) {
      if (this.map.size <= this.capacity) return;
      if (this.canEvict(value)) this.map.delete(key);
    }
  }
}
