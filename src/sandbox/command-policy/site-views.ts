/*
 * Questions the rules ask of a CommandSite: does any view of it run this program, which paths
 * does it write, which options did it get. Shared by the rule families in this folder.
 */
import type { CommandSite } from './command-sites.js';
import { operands } from './targets.js';

export type ViewTest = (program: string, args: readonly string[], argv: readonly string[]) => boolean;

export function someView(site: CommandSite, test: ViewTest): boolean {
  return site.views.some((view) => test(view.program, view.args, view.argv));
}

/** Redirections that open their target for writing (`>&2` only duplicates a descriptor). */
const WRITING_REDIRECTS = new Set(['>', '>>', '>|', '&>', '&>>', '<>', '>&']);
/** Programs whose last operand is the file they write. */
const COPIERS = new Set(['cp', 'mv', 'install', 'ln', 'rsync', 'scp']);
/** Programs whose every operand is a file they write. */
const FILE_WRITERS = new Set(['tee', 'truncate', 'fallocate']);

/** Paths a command writes: output redirections, `tee`, `dd of=`, `cp`/`mv`/`install`/`ln` targets, `sed -i`, `truncate`. */
export function writtenPaths(site: CommandSite): string[] {
  const paths: string[] = [];
  for (const r of site.redirects) {
    if (WRITING_REDIRECTS.has(r.op) && r.target !== undefined && !/^(?:\d+|-)$/.test(r.target)) paths.push(r.target);
  }
  for (const view of site.views) {
    const { program, args } = view;
    if (FILE_WRITERS.has(program)) paths.push(...operands(args).filter((arg) => !/^[+-]?\d+[KMGTkmgt]?$/.test(arg)));
    else if (program === 'dd') paths.push(...args.filter((arg) => arg.startsWith('of=')).map((arg) => arg.slice(3)));
    else if (COPIERS.has(program)) {
      const targetOption = optionValue(args, 't', 'target-directory');
      const files = operands(args);
      if (targetOption !== undefined) paths.push(targetOption);
      else if (files.length >= 2) paths.push(files.at(-1) as string);
    } else if (program === 'sed' && args.some((arg) => /^-[^-]*i|^--in-place/.test(arg))) paths.push(...operands(args));
  }
  return paths;
}

export function writesTo(site: CommandSite, path: (target: string) => boolean): boolean {
  return writtenPaths(site).some(path);
}

/** The value of `-x value`, `-xvalue`, `--long value` or `--long=value`, if given. */
export function optionValue(args: readonly string[], short: string | undefined, long: string | undefined): string | undefined {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? '';
    if (arg === '--') return undefined;
    if (long !== undefined && arg === `--${long}`) return args[i + 1];
    if (long !== undefined && arg.startsWith(`--${long}=`)) return arg.slice(long.length + 3);
    if (short !== undefined && arg === `-${short}`) return args[i + 1];
    if (short !== undefined && arg.startsWith(`-${short}`) && !arg.startsWith('--')) return arg.slice(2);
  }
  return undefined;
}

/** Whether `-x` appears alone or in a cluster (`-fdx`), or `--long`/`--long=…`. */
export function hasOption(args: readonly string[], short: string | undefined, long: string | undefined): boolean {
  for (const arg of args) {
    if (arg === '--') return false;
    if (long !== undefined && (arg === `--${long}` || arg.startsWith(`--${long}=`))) return true;
    if (short !== undefined && /^-[A-Za-z0-9]+$/.test(arg) && arg.slice(1).includes(short)) return true;
  }
  return false;
}

/** An argument whose value comes from a command substitution. */
export function isSubstituted(site: CommandSite, arg: string): boolean {
  return site.dynamic.has(arg) && /\$\(|`|<\(/.test(arg);
}
