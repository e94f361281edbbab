/*
 * What GET /readyz asks beyond "not shutting down" (the gateway knows that): the store answers
 * a read and a durability barrier in time, takes writes (not a full disk), and the config in
 * force passes the schema. A failing check is reported to `notReady` (the log) with its
 * reason; the HTTP answer's `details` only say which kind of check failed and how much damage
 * the store worked around, never ids or paths (anyone may ask /readyz).
 */
import { ConfigSchema, type Config } from '../config/index.js';
import type { Store } from '../store/index.js';

export interface ReadinessOptions {
  store: Pick<Store, 'getRun' | 'durable' | 'health'>;
  config: () => Config;
  /** How long the store may take to answer. Default 2 s. */
  timeoutMs?: number;
  /** Why the server is not ready. Must not throw. */
  notReady?: (reason: string) => void;
}

/** The answer to GET /readyz. */
export interface Readiness {
  ready: boolean;
  /** One short line per thing worth knowing (a failed check, damage worked around); no ids or paths. */
  details: string[];
}

/** A run id no run has: reading it is a round trip to the store that finds nothing. */
const PROBE_RUN_ID = '\u0000readyz';

export function readinessProbe(options: ReadinessOptions): () => Promise<Readiness> {
  const timeoutMs = options.timeoutMs ?? 2_000;
  const details: string[] = [];
  const fail = (reason: string, detail: string): Readiness => {
    options.notReady?.(reason);
    return { ready: false, details: [...details, detail] };
  };
  return async () => {
    details.length = 0;
    if (!ConfigSchema.safeParse(options.config()).success)
      return fail('the config in force does not pass the schema', 'config: invalid');
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), timeoutMs)));
    try {
      // First: while writes fail it looks for room again, and takes writes again once there is.
      const health = await Promise.race([options.store.health?.(), late]);
      if (health === 'late') return fail(`the store did not answer within ${timeoutMs} ms`, 'store: too slow');
      if (health && health.damage.length > 0) {
        details.push(
          `store: ${health.damage.length} damaged file(s) or journal line(s) set aside at or since open; the server log names them`,
        );
      }
      if (health && !health.writable)
        return fail(
          `the store refuses writes: ${health.problem ?? 'unknown'}`,
          'store: writes fail (full disk?); refused until there is room again',
        );
      const answer = await Promise.race([
        Promise.all([options.store.getRun(PROBE_RUN_ID), options.store.durable()]),
        late,
      ]);
      return answer === 'late'
        ? fail(`the store did not answer within ${timeoutMs} ms`, 'store: too slow')
        : { ready: true, details: [...details] };
    } catch (error) {
      return fail(`the store failed: ${error instanceof Error ? error.message : String(error)}`, 'store: failed');
    } finally {
      clearTimeout(timer);
    }
  };
}
