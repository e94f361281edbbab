/*
 * What Redis did between two moments, read from the server itself: every command it executed
 * (`INFO commandstats`, which counts the commands a script calls as well as the script call),
 * and the CPU time its process used (`INFO cpu`, used_cpu_sys + used_cpu_user). The `INFO`
 * calls that take the readings are left out of the count.
 */
import type { Redis } from 'ioredis';

export interface RedisReading {
  calls: Map<string, number>;
  cpuSeconds: number;
}

export interface RedisWork {
  /** Commands executed, by name (lower case, as INFO names them). */
  calls: Map<string, number>;
  commands: number;
  cpuMs: number;
}

export async function readRedis(client: Redis): Promise<RedisReading> {
  const [stats, cpu] = await Promise.all([client.info('commandstats'), client.info('cpu')]);
  const calls = new Map<string, number>();
  for (const match of stats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls.set(match[1]!, Number(match[2]));
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(cpu)?.[1] ?? 0);
  return { calls, cpuSeconds: field('used_cpu_sys') + field('used_cpu_user') };
}

export function workBetween(before: RedisReading, after: RedisReading): RedisWork {
  const calls = new Map<string, number>();
  for (const [name, count] of after.calls) {
    if (name === 'info') continue;
    const done = count - (before.calls.get(name) ?? 0);
    if (done > 0) calls.set(name, done);
  }
  const commands = [...calls.values()].reduce((sum, n) => sum + n, 0);
  return { calls, commands, cpuMs: (after.cpuSeconds - before.cpuSeconds) * 1000 };
}

/** "12.0 evalsha, 9.0 xadd, …" per run, most first. */
export function breakdownPerRun(work: RedisWork, runs: number): string {
  return [...work.calls.entries()]
    .sort((a, b) => b[1] - a[1])
    .map(([name, count]) => `${(count / runs).toFixed(count / runs >= 10 ? 0 : 1)} ${name}`)
    .join(', ');
}
