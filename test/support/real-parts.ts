/*
 * The real system parts some tests run — bubblewrap, redis-server, Chromium, strace (and what
 * a few of those tests also need: root, python3) — checked in this one place.
 *
 * Where a part is missing, its tests skip and the file says why: a developer's machine need
 * not have them all. CI installs every part and runs the tests with
 * SWITCHYARD_REQUIRE_REAL_PARTS=1 (.ci/run): there a missing part fails the test file instead,
 * so a test that needs a real part cannot pass CI by not running. test/architecture/
 * real-parts.test.ts checks that every test using a real part is guarded from here.
 *
 * @example
 *   const bwrap = await hasBwrap('the sandbox limit tests', commandUser());
 *   describe.skipIf(!bwrap)('sandbox limits', () => { … });
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { probeBwrap } from '../../src/sandbox/bwrap.js';
import { findSetpriv } from '../../src/sandbox/parent-guard.js';
import { redisUnavailable } from '../cluster/redis-server.js';

/** Set by .ci/run: a missing real part is a failure, not a skip. */
export const REQUIRE_REAL_PARTS = process.env.SWITCHYARD_REQUIRE_REAL_PARTS === '1';

/** Debian's chromium (never a browser download); CHROMIUM names another binary. */
export const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';

/**
 * Whether the tests of `what` can run, given why `part` is missing (undefined: it is there).
 * Missing: throws when real parts are required, otherwise says why the tests skip.
 */
export function available(part: string, missing: string | undefined, what: string): boolean {
  if (missing === undefined) return true;
  const why = `${part} is missing for ${what}: ${missing}`;
  if (REQUIRE_REAL_PARTS)
    throw new Error(`${why}. SWITCHYARD_REQUIRE_REAL_PARTS=1 is set: a missing real part fails instead of skipping.`);
  console.warn(`skipped: ${why}`);
  return false;
}

/** The user a server running as root runs commands as (nobody); undefined when not root. */
export function commandUser(): { uid: number; gid: number } | undefined {
  return process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : undefined;
}

/** bubblewrap on PATH runs a command under the sandbox's confinement (as `user`, when given). */
export async function hasBwrap(what: string, user?: { uid: number; gid: number }): Promise<boolean> {
  const probe = await probeBwrap(undefined, user);
  return available('bubblewrap', probe.available ? undefined : `it cannot run here (${probe.reason})`, what);
}

/** redis-server (env REDIS_SERVER, default Debian's /usr/bin/redis-server) runs. */
export function hasRedis(what: string): boolean {
  return available('redis-server', redisUnavailable(), what);
}

/** Chromium is installed at CHROMIUM. */
export function hasChromium(what: string): boolean {
  const missing = existsSync(CHROMIUM) ? undefined : `${CHROMIUM} is missing (apt-get install chromium)`;
  return available('Chromium', missing, what);
}

/** strace on PATH runs. */
export function hasStrace(what: string): boolean {
  const probe = spawnSync('strace', ['-V'], { encoding: 'utf8' });
  const missing = probe.error || probe.status !== 0 ? 'strace is not runnable (apt-get install strace)' : undefined;
  return available('strace', missing, what);
}

/** python3 (Debian's /usr/bin/python3) is installed. */
export function hasPython3(what: string): boolean {
  const missing = existsSync('/usr/bin/python3') ? undefined : '/usr/bin/python3 is missing (apt-get install python3)';
  return available('python3', missing, what);
}

/** The tests run as root (CI does: it installs the parts with apt-get). */
export function isRoot(what: string): boolean {
  return available('root', process.getuid?.() === 0 ? undefined : 'the tests do not run as root', what);
}

/** util-linux's setpriv, which arms a command's parent-death signal (src/sandbox/parent-guard.ts). */
export function hasSetpriv(what: string): boolean {
  const missing = findSetpriv() === undefined ? 'setpriv is not on PATH (util-linux)' : undefined;
  return available('setpriv', missing, what);
}
