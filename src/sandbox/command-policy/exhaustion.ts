/*
 * Resource exhaustion in its other spellings than the floor's shell fork bomb: fork loops in an
 * interpreter, a loop without an end that starts background jobs, `xargs`/`parallel` told to run
 * without a bound. The sandbox's process limit is the wall; this is the early warning.
 */
import type { CommandSite } from './command-sites.js';
import { optionValue, someView } from './site-views.js';

/** A parallelism above this many processes at once is a flood, not a speed-up. */
const MAX_PARALLEL = 64;

const FORK = /\bfork\b|\bFork\b|os\.fork|Process\.fork|child_process|pcntl_fork|spawn/;
const FOREVER = /\bwhile\b|\bloop\b|\bfor\s*\(\s*;\s*;|\buntil\b|\bredo\b|\bdo\b|setInterval|\bgoto\b/;

export function exhaustsResources(site: CommandSite): boolean {
  if (site.unboundedLoop && site.concurrent) return true;
  if (site.code.some((code) => FORK.test(code) && FOREVER.test(code))) return true;
  return someView(site, (program, args) => {
    if (program === 'xargs') return unbounded(optionValue(args, 'P', 'max-procs'));
    if (program === 'parallel') return unbounded(optionValue(args, 'j', 'jobs') ?? optionValue(args, 'P', 'max-procs'));
    return false;
  });
}

/** `0` means "as many as possible" to both `xargs -P` and `parallel -j`; `200%` is per core. */
function unbounded(value: string | undefined): boolean {
  if (value === undefined) return false;
  const number = Number.parseInt(value, 10);
  if (value.trim() === '0' || value.trim() === '0%') return true;
  return Number.isFinite(number) && (value.endsWith('%') ? number > 400 : number > MAX_PARALLEL);
}
