/*
 * Store append latency without touching the engine: the store handed to createEngine is
 * wrapped so that each appendEvent is timed from the call to the store's answer (at once for
 * a store that answers synchronously, when its promise settles otherwise). Every other
 * member passes through untouched.
 */
import { performance } from 'node:perf_hooks';
import { Histogram, type Registry } from 'prom-client';
import type { Store } from '../store/index.js';

export function timedStore(store: Store, registry: Registry): Store {
  const latency = new Histogram({
    name: 'switchyard_store_append_seconds',
    help: 'From appending an event to the store until the store has it (the engine publishes an event only then).',
    buckets: [0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    registers: [registry],
  });
  const appendEvent: Store['appendEvent'] = (event) => {
    const started = performance.now();
    const observe = () => latency.observe((performance.now() - started) / 1000);
    const written = store.appendEvent(event);
    if (written === undefined) {
      observe();
      return undefined;
    }
    return written.finally(observe);
  };
  const bound = new Map<PropertyKey, unknown>();
  return new Proxy(store, {
    get(target, key) {
      if (key === 'appendEvent') return appendEvent;
      const value: unknown = Reflect.get(target, key, target);
      if (typeof value !== 'function') return value;
      // Methods run on the store itself, so private fields and `this` work as before.
      if (!bound.has(key)) bound.set(key, value.bind(target));
      return bound.get(key);
    },
  });
}
