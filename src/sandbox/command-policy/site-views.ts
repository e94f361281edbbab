/*
 * Questions the rules ask of a CommandSite: does any view of it run this program, which paths
 * does it write, which options did it get. Shared by the rule families in this folder.
 */
import type { CommandSite } from './command-sites.js';
import { takesOperandsAsData } from './named-programs.js';
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

/** Programs whose `-o` is a flag or an option other than an output file. */
const DASH_O_IS_NOT_OUTPUT = new Set([
  'ps',
  'find',
  'lsblk',
  'pgrep',
  'pkill',
  'set',
  'mount',
  'ssh',
  'scp',
  'sftp',
  'sshfs',
  'test',
  '[',
  'xargs',
  'ip',
  'top',
]);
/** Long options, in any program, whose value is the file it writes. */
const OUTPUT_OPTIONS = /^--(?:output|output-file|outfile|out-file|output-document|log-file|logfile)$/;

/**
 * Paths a command writes: output redirections, `tee`, `dd of=`, `cp`/`mv`/`install`/`ln` targets,
 * `sed -i` and sed's `w` command and flag, `truncate`, and any program's output option (`sort -o`,
 * `curl -o`, `wget -O`, `--output=`, `openssl -out`): a write is judged by its target, whatever makes it.
 */
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
    } else if ((program === 'sed' || program === 'gsed') && args.some((arg) => /^-[^-]*i|^--in-place/.test(arg)))
      paths.push(...operands(args));
    if (program === 'sed' || program === 'gsed') paths.push(...sedScripts(args).flatMap(sedWrittenFiles));
    paths.push(...outputOptionValues(program, args));
  }
  return paths;
}

function outputOptionValues(program: string, args: readonly string[]): string[] {
  if (takesOperandsAsData(program)) return [];
  const values: string[] = [];
  // `-o file`, or a cluster that ends with it (`curl -sSo file`, `wget -qO file`).
  const shortOutput = DASH_O_IS_NOT_OUTPUT.has(program)
    ? undefined
    : program === 'wget' || program === 'wget2'
      ? /^-[A-Za-z]*[oO]$/
      : /^-[A-Za-z]*o$/;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? '';
    if (arg === '--') break;
    const long = /^(--[a-z-]+)(?:=(.*))?$/s.exec(arg);
    if (long && OUTPUT_OPTIONS.test(long[1] ?? '')) values.push(long[2] ?? args[++i] ?? '');
    else if ((shortOutput?.test(arg) || (program === 'openssl' && arg === '-out')) && args[i + 1] !== undefined)
      values.push(args[++i] ?? '');
    else if (shortOutput && /^-o./.test(arg) && !/^-o[A-Z][a-z]+=/.test(arg) && program !== 'wget')
      values.push(arg.slice(2));
  }
  return values.filter((value) => value !== '' && !value.startsWith('-'));
}

/** sed's `w file` command and the `w file` flag of `s///`: the file name runs to the end of the line. */
function sedWrittenFiles(script: string): string[] {
  const files: string[] = [];
  for (const match of script.matchAll(/(?:^|[;\n{}]|[0-9$]|\/)\s*[wW]\s+([^\n]+)/g))
    files.push((match[1] ?? '').trim());
  for (const match of script.matchAll(/s(.)(?:\\.|(?!\1).)*\1(?:\\.|(?!\1).)*\1[a-zA-Z0-9]*w\s*([^\n]+)/g))
    files.push((match[2] ?? '').trim());
  return files;
}

/** The scripts of a `sed` command: each `-e`/`--expression`, or the first operand. */
export function sedScripts(args: readonly string[]): string[] {
  const scripts: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? '';
    if (arg === '-e' || arg === '--expression') scripts.push(args[i + 1] ?? '');
    else if (arg.startsWith('--expression=')) scripts.push(arg.slice(13));
  }
  if (scripts.length > 0) return scripts;
  const first = operands(args.filter((_arg, i) => !/^-[fl]$/.test(args[i - 1] ?? '')))[0];
  return first === undefined ? [] : [first];
}

export function writesTo(site: CommandSite, path: (target: string) => boolean): boolean {
  return writtenPaths(site).some(path);
}

/** The value of `-x value`, `-xvalue`, `--long value` or `--long=value`, if given. */
export function optionValue(
  args: readonly string[],
  short: string | undefined,
  long: string | undefined,
): string | undefined {
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
