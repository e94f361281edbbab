/*
 * What GET /readyz asks beyond "not shutting down" (the gateway knows that): the store answers
 * a read and a durability barrier in time, and the config in force passes the schema. A
 * failing check is reported to `notReady` (the log), never in the HTTP answer.
 */
import { ConfigSchema, type Config } from '../config/index.js';
import type { Store } from '../store/index.js';

export interface ReadinessOptions {
  store: Pick<Store, 'getRun' | 'durable'>;
  config: () => Config;
  /** How long the store may take to answer. Default 2 s. */
  timeoutMs?: number;
  /** Why the server is not ready. Must not throw. */
  notReady?: (reason: string) => void;
}

/** A run id no run has: reading it is a round trip to the store that finds nothing. */
const PROBE_RUN_ID = '\u0000readyz';

export function readinessProbe(options: ReadinessOptions): () => Promise<boolean> {
  const timeoutMs = options.timeoutMs ?? 2_000;
  const fail = (reason: string) => {
    options.notReady?.(reason);
    return false;
  };
  return async () => {
    if (!ConfigSchema.safeParse(options.config()).success) return fail('the config in force does not pass the schema');
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), timeoutMs)));
    try {
      const answer = await Promise.race([Promise.all([options.store.getRun(PROBE_RUN_ID), options.store.durable()]), late]);
      return answer === 'late' ? fail(`the store did not answer within ${timeoutMs} ms`) : true;
    } catch (error) {
      return fail(`the store failed: ${error instanceof Error ? error.message : String(error)}`);
    } finally {
      clearTimeout(timer);
    }
  };
}
