/*
 * The concurrency claim of a shell command, derived from its syntax tree (docs/bash-claims.md):
 * read-only programs and subcommands are shared reads of their path operands (or of the
 * working directory when they name none), programs with known path effects (`mkdir`, `touch`,
 * `rm`, `mv`, `cp`, `tee`, output redirections) claim those paths, pipelines and lists take the
 * union, and anything else, or anything uncertain (a variable, `cd`, a substitution's output in
 * a path, an unknown option), is global. It may claim too much, never too little.
 */
import path from 'node:path';
import { Claims, type Claim } from '../../concurrency/index.js';
import { findStartingPoints } from './destruction.js';
import { readScript } from './read-script.js';
import type { Redirect, Script, ShellNode, SimpleCommand, Word } from './shell-script.js';
import { expandWord, FRESH_SHELL, knownText, type ShellVariables } from './word-expansion.js';
import { programName, stripPrelude } from './wrappers.js';

export interface CommandClaimContext {
  /** The workspace; `$HOME` and `~` are the workspace too (the bash tool sets HOME there). */
  readonly workspace: string;
  /** Where the command runs: the workspace or a directory inside it. */
  readonly cwd: string;
}

/** Thrown inside the walk when a command's footprint cannot be bounded: the claim is global. */
class Unbounded extends Error {
  override readonly name = 'Unbounded';
}

export function deriveCommandClaim(command: string, context: CommandClaimContext): Claim {
  const read = readScript(command);
  if (read.unparseable || read.truncated) return Claims.global();
  const footprint = new Footprint(context);
  try {
    footprint.script(read.script, scopeFor(context));
  } catch (error) {
    if (error instanceof Unbounded) return Claims.global();
    throw error;
  }
  return footprint.claim();
}

function scopeFor(context: CommandClaimContext): Scope {
  const values = new Map(FRESH_SHELL.values);
  values.set('HOME', context.workspace);
  values.set('PWD', context.cwd);
  return { values, positional: FRESH_SHELL.positional };
}

interface Scope extends ShellVariables {
  readonly values: Map<string, string>;
}

/** Programs that read the files they name and write none (stdout aside). */
const READERS = new Set([
  'cat',
  'head',
  'tail',
  'wc',
  'nl',
  'tac',
  'rev',
  'stat',
  'file',
  'ls',
  'tree',
  'du',
  'md5sum',
  'sha1sum',
  'sha256sum',
  'sha512sum',
  'cksum',
  'strings',
  'od',
  'hexdump',
  'cut',
  'paste',
  'comm',
  'cmp',
  'diff',
  'fold',
  'fmt',
  'column',
  'expand',
  'unexpand',
  'basename',
  'dirname',
  'realpath',
  'readlink',
  'grep',
  'egrep',
  'fgrep',
  'rg',
  'ag',
  'jq',
  'less',
  'more',
  'sort',
  'uniq',
  'tr',
  'base64',
  'xxd',
]);

/** Programs and builtins that touch no file at all. */
const PURE = new Set([
  'echo',
  'printf',
  'true',
  'false',
  ':',
  'pwd',
  'date',
  'whoami',
  'id',
  'uname',
  'hostname',
  'which',
  'type',
  'seq',
  'yes',
  'sleep',
  'env',
  'printenv',
  'expr',
  'read',
  '((',
  'export',
  'local',
  'declare',
  'readonly',
  'typeset',
  'unset',
  'set',
  'shift',
]);

/** Short options that take a value, per reader: the value is not a path operand. */
const VALUE_OPTIONS: Readonly<Record<string, string>> = {
  head: 'nc',
  tail: 'ncs',
  grep: 'efmABCdD',
  egrep: 'efmABCdD',
  fgrep: 'efmABCdD',
  rg: 'efgtTmABCMjrE',
  ag: 'GgmABC',
  cut: 'dfcb',
  sort: 'ktSTo',
  uniq: 'fsw',
  du: 'dBt',
  ls: 'ITw',
  tree: 'LIPo',
  diff: 'xXFIS',
  jq: '',
  od: 'AjNtw',
  xxd: 'cglos',
  fold: 'w',
  column: 'cstoNO',
  cmp: 'in',
  strings: 'nt',
};

/** Options that make a reader write (`sort -o out`), run something (`rg --pre`) or read files it does not name. */
const READER_WRITING_OPTIONS: Readonly<Record<string, RegExp>> = {
  sort: /^(?:-o.*|--output.*|--files0-from.*)$/,
  rg: /^(?:--pre.*|--hostname-bin.*|-z|--search-zip)$/,
  grep: /^(?:-f.*|--file.*)$/,
  jq: /^(?:--rawfile|--slurpfile|-L|--from-file|-f)$/,
  xxd: /^-r$/,
  base64: /^(?:-o.*|--output.*)$/,
};

/** Git subcommands that only read the repository (with the options that would make them write excluded). */
const GIT_READERS = new Set([
  'status',
  'log',
  'diff',
  'show',
  'blame',
  'rev-parse',
  'ls-files',
  'ls-tree',
  'grep',
  'describe',
  'shortlog',
  'cat-file',
  'for-each-ref',
  'count-objects',
  'whatchanged',
  'rev-list',
  'name-rev',
  'merge-base',
  'check-ignore',
  'var',
  'version',
  'help',
]);
const GIT_WRITING_OPTIONS = /^(?:--output.*|--ext-diff|--textconv|--exec.*|--paginate|--open-files-in-pager.*|-O.*)$/;
/** Readers that read the working directory when they name no path. */
const CWD_READERS = new Set(['ls', 'tree', 'du', 'rg', 'ag']);
/** Readers whose first operand is a pattern or a filter, not a path (unless `-e`/`-f` gave it). */
const PATTERN_FIRST = new Set(['grep', 'egrep', 'fgrep', 'rg', 'ag', 'jq']);
/** Variables set for one command that change only how its output looks. */
const COSMETIC_VARIABLES = /^(?:LANG|LC_[A-Z]+|TZ|NO_COLOR|FORCE_COLOR|COLUMNS|LINES|TERM|GIT_PAGER|PAGER)$/;

/** Programs whose operands are all paths they write (or remove). */
const PATH_WRITERS = new Set(['touch', 'rm', 'rmdir', 'mkdir', 'tee', 'truncate', 'shred', 'unlink']);
/** Programs whose operands are read, and the last one written. */
const COPIERS = new Set(['cp', 'ln', 'install']);
/** Descriptors that are not files in the workspace. */
const NOT_A_FILE = /^\/dev\/(?:null|zero|stdout|stderr|stdin|tty|fd\/\d+)$/;

class Footprint {
  private readonly reads = new Set<string>();
  private readonly writes = new Set<string>();
  private unknownRead = false;

  constructor(private readonly context: CommandClaimContext) {}

  claim(): Claim {
    if (this.writes.size > 0) {
      if (this.unknownRead) return Claims.global();
      return Claims.paths(outermost([...this.writes, ...this.reads]));
    }
    if (this.unknownRead) return Claims.shared();
    return Claims.shared(this.reads.size > 0 ? outermost([...this.reads]) : [this.context.cwd]);
  }

  script(script: Script, scope: Scope): void {
    for (const pipeline of script.pipelines) for (const node of pipeline.nodes) this.node(node, scope);
  }

  private node(node: ShellNode, scope: Scope): void {
    if (node.kind === 'function') throw new Unbounded('defines a function');
    if (node.kind === 'group') {
      if (node.loop?.variable !== undefined)
        throw new Unbounded('a loop variable takes values this reading does not follow');
      for (const word of node.header) this.expansions(word, scope);
      this.redirects(node.redirects, scope);
      this.script(node.body, node.subshell ? { ...scope, values: new Map(scope.values) } : scope);
      return;
    }
    this.simple(node, scope);
  }

  private simple(command: SimpleCommand, scope: Scope): void {
    for (const word of command.words) this.expansions(word, scope);
    for (const assignment of command.assignments) {
      if (assignment.value) this.expansions(assignment.value, scope);
      if (command.words.length === 0) {
        const value = assignment.value ? knownText(assignment.value, scope) : assignment.array ? undefined : '';
        if (value === undefined) scope.values.delete(assignment.name);
        else scope.values.set(assignment.name, value);
      }
    }
    this.redirects(command.redirects, scope);
    if (command.words.length === 0) return;
    if (command.assignments.some((a) => !COSMETIC_VARIABLES.test(a.name)))
      throw new Unbounded('a variable set for one command can change what it does');

    const argv = this.argv(command.words, scope);
    const [program, ...args] = peelHarmlessWrappers(stripPrelude(argv));
    const name = programName(program);
    if (name === '' || program === undefined) throw new Unbounded('no program');
    if (PURE.has(name)) return this.pure(name, args, scope);
    if (name === 'tr') return;
    // `[ -f x ]`, `test -d y`: metadata of what the expression names, under the working directory.
    if (name === 'test' || name === '[' || name === '[[') return this.pathsOrCwd([], 'read');
    if (READERS.has(name)) return this.reader(name, args);
    if (name === 'find') return this.find(args);
    if (name === 'git') return this.git(args);
    if (name === 'sed' || name === 'awk') return this.textProcessor(name, args);
    if (PATH_WRITERS.has(name)) return this.writer(name, args);
    if (name === 'mv') return this.paths(operandsOf(args), 'write');
    if (COPIERS.has(name)) return this.copier(args);
    if (name === 'chmod' || name === 'chown' || name === 'chgrp') return this.paths(operandsOf(args).slice(1), 'write');
    throw new Unbounded(`${name} has effects this reading does not know`);
  }

  private pure(name: string, args: readonly string[], scope: Scope): void {
    if (name === 'env' && args.length > 0) throw new Unbounded('env runs a command');
    if (name === 'read')
      for (const variable of args.filter((a) => /^[A-Za-z_]\w*$/.test(a))) scope.values.delete(variable);
    if (name === 'unset')
      for (const variable of args.filter((a) => /^[A-Za-z_]\w*$/.test(a))) scope.values.set(variable, '');
    if (name === 'set' && args.some((a) => a === '--' || (!a.startsWith('-') && !a.startsWith('+'))))
      throw new Unbounded('set changes the positional parameters');
  }

  private reader(name: string, args: readonly string[]): void {
    const writing = READER_WRITING_OPTIONS[name];
    if (writing && args.some((arg) => writing.test(arg)))
      throw new Unbounded(`${name} with an option that writes or runs something`);
    if ((name === 'uniq' || name === 'xxd') && operandsOf(args, VALUE_OPTIONS[name]).length > 1)
      throw new Unbounded(`${name}'s second operand is its output file`);
    const operands = operandsOf(args, VALUE_OPTIONS[name]);
    const patternGiven = name !== 'jq' && args.some((a) => /^-[a-zA-Z]*[ef]$|^--(?:regexp|file)/.test(a));
    const paths = (PATTERN_FIRST.has(name) && !patternGiven ? operands.slice(1) : operands).filter((p) => p !== '-');
    // With nothing named, `ls`, `rg`, `grep -r` read the working directory; `cat`, `sort`, `jq` read stdin.
    if (
      paths.length === 0 &&
      (CWD_READERS.has(name) || (name.endsWith('grep') && args.some((a) => /^-[a-zA-Z]*[rR]|^--recursive/.test(a))))
    )
      this.reads.add(this.context.cwd);
    else this.paths(paths, 'read');
  }

  private find(args: readonly string[]): void {
    if (args.some((arg) => /^-(?:delete|exec|execdir|ok|okdir|fprint|fprint0|fprintf|fls)$/.test(arg)))
      throw new Unbounded('find with an action');
    this.paths(findStartingPoints(args), 'read');
  }

  private git(args: readonly string[]): void {
    let i = 0;
    for (; i < args.length; i++) {
      const arg = args[i] ?? '';
      if (arg === '-C' || arg === '-c' || arg === '--git-dir' || arg === '--work-tree' || arg.startsWith('-c'))
        throw new Unbounded('git with a directory or a setting given');
      if (arg === '--no-pager' || arg === '--no-optional-locks' || arg === '-P') continue;
      if (!arg.startsWith('-')) break;
      throw new Unbounded(`git option ${arg}`);
    }
    const subcommand = args[i];
    const rest = args.slice(i + 1);
    const listing =
      ((subcommand === 'branch' || subcommand === 'tag' || subcommand === 'remote') &&
        rest.every((arg) => /^(?:-[avrl]+|--list|--all|--verbose|--show-current|--remotes)$/.test(arg))) ||
      (subcommand === 'stash' && (rest[0] === 'list' || rest[0] === 'show'));
    const config = subcommand === 'config' && rest.some((arg) => /^--(?:get|get-all|get-regexp|list)$|^-l$/.test(arg));
    if (!listing && !config && !(subcommand !== undefined && GIT_READERS.has(subcommand)))
      throw new Unbounded(`git ${subcommand ?? ''} may write`);
    if (rest.some((arg) => GIT_WRITING_OPTIONS.test(arg)))
      throw new Unbounded('git with an option that writes or runs something');
    // Git reads the repository as a whole, wherever the paths it is given point.
    this.reads.add(this.context.workspace);
    // `git diff` refreshes and rewrites the index even when told not to take optional locks (seen under strace).
    if (subcommand === 'diff') this.writes.add(path.join(this.context.workspace, '.git', 'index'));
  }

  /** `sed` and `awk`: a script, then the files it reads (or, with `-i`, rewrites). */
  private textProcessor(name: string, args: readonly string[]): void {
    if (args.some((arg) => arg === '-f' || arg.startsWith('--file')))
      throw new Unbounded(`${name} program from a file`);
    const inPlace = args.some((arg) => /^-[a-zA-Z]*i|^--in-place/.test(arg));
    const scripts = args.filter((_arg, i) => args[i - 1] === '-e' || args[i - 1] === '--expression');
    const operands = operandsOf(args, name === 'sed' ? 'el' : 'vF');
    const script = scripts.length > 0 && name === 'sed' ? scripts.join('\n') : (operands[0] ?? '');
    const files = scripts.length > 0 && name === 'sed' ? operands : operands.slice(1);
    if (name === 'awk' && /system|getline|[|>]|fflush|close/.test(script))
      throw new Unbounded('awk program that writes or runs something');
    if (
      name === 'sed' &&
      (/(?:^|[;\n{}])\s*(?:\d+|\$|\/[^/]*\/)?\s*[wWe](?:\s|;|$)/.test(script) ||
        /\/[gpiIMm0-9]*[wWe](?:\s|;|$)/.test(script))
    ) {
      throw new Unbounded('sed script that writes or runs something');
    }
    // `sed -i` writes a temporary file beside each file and renames it over: it writes their directories.
    if (inPlace)
      this.paths(
        files.map((file) => (file.startsWith(UNKNOWN) ? file : path.dirname(file))),
        'write',
      );
    else this.pathsOrCwd(files, 'read');
  }

  private writer(name: string, args: readonly string[]): void {
    const operands = operandsOf(
      args,
      name === 'truncate' ? 'sr' : name === 'touch' ? 'rdt' : name === 'mkdir' ? 'm' : name === 'shred' ? 'ns' : '',
    );
    if (operands.length === 0) return this.pathsOrCwd([], 'read');
    const parents = name === 'mkdir' && args.some((arg) => /^-[a-zA-Z]*p|^--parents/.test(arg));
    // `mkdir -p a/b/c` may create `a` and `a/b` as well: claim from the first new ancestor up.
    this.paths(parents ? operands.map(firstComponent) : operands, 'write');
    if (name === 'touch') {
      const reference = args.find((_a, i) => args[i - 1] === '-r');
      if (reference !== undefined) this.paths([reference], 'read');
    }
  }

  private copier(args: readonly string[]): void {
    const operands = operandsOf(args, 'tSm');
    const target =
      args.find((_a, i) => args[i - 1] === '-t') ?? args.find((a) => a.startsWith('--target-directory='))?.slice(19);
    if (operands.length < 2 && target === undefined) throw new Unbounded('copy without a target');
    const dest = target ?? (operands.at(-1) as string);
    const sources = target === undefined ? operands.slice(0, -1) : operands;
    this.paths([dest], 'write');
    this.paths(sources, 'read');
  }

  private redirects(redirects: readonly Redirect[], scope: Scope): void {
    for (const redirect of redirects) {
      if (
        redirect.hereDocument?.expands &&
        redirect.hereDocument.parts.some((p) => p.kind === 'substitution' || p.kind === 'process')
      )
        throw new Unbounded('a here-document runs a substitution');
      if (!redirect.target || redirect.op === '<<<' || /^[<>]&$/.test(redirect.op) || redirect.op.endsWith('&-')) {
        if (redirect.target) this.expansions(redirect.target, scope);
        continue;
      }
      const [target] = this.argv([redirect.target], scope);
      if (target === undefined || NOT_A_FILE.test(target)) continue;
      this.paths([target], redirect.op === '<' ? 'read' : 'write');
    }
  }

  /** Commands in substitutions count; their output in a word makes the word unknown. */
  private expansions(word: Word, scope: Scope): void {
    for (const part of word.parts) {
      if (part.kind === 'substitution' || part.kind === 'process')
        this.script(part.script, { ...scope, values: new Map(scope.values) });
      else if (part.kind === 'parameter' || part.kind === 'arithmetic')
        for (const nested of part.scripts) this.script(nested, { ...scope, values: new Map(scope.values) });
    }
  }

  /** The words as bash passes them; an unknown value (a variable, a substitution) or a glob is marked. */
  private argv(words: readonly Word[], scope: Scope): string[] {
    const argv: string[] = [];
    for (const word of words) {
      const expanded = expandWord(word, scope);
      for (const field of expanded.fields)
        argv.push(expanded.unresolved ? UNKNOWN + field : expanded.glob ? GLOB + field : field);
    }
    return argv;
  }

  private pathsOrCwd(paths: readonly string[], access: 'read' | 'write'): void {
    if (paths.length === 0) this.reads.add(this.context.cwd);
    else this.paths(paths, access);
  }

  private paths(paths: readonly string[], access: 'read' | 'write'): void {
    for (const raw of paths) {
      if (raw.startsWith(UNKNOWN)) {
        if (access === 'write') throw new Unbounded('writes a path known only at run time');
        this.unknownRead = true;
        continue;
      }
      const resolved = this.resolve(raw.startsWith(GLOB) ? globBase(raw.slice(GLOB.length)) : raw);
      if (NOT_A_FILE.test(resolved)) continue;
      (access === 'read' ? this.reads : this.writes).add(resolved);
    }
  }

  private resolve(raw: string): string {
    const home = /^~(?=\/|$)/.test(raw) ? this.context.workspace + raw.slice(1) : raw;
    if (/^~/.test(home)) throw new Unbounded("another user's home directory");
    return path.resolve(this.context.cwd, home);
  }
}

/** The paths not inside another of them: a claim on `/w` already covers `/w/src`. */
function outermost(paths: readonly string[]): string[] {
  const unique = [...new Set(paths)];
  return unique.filter(
    (candidate) => !unique.some((other) => other !== candidate && (candidate.startsWith(`${other}/`) || other === '/')),
  );
}

/** Marks on argv entries: a value known only at run time, and a glob the shell expands. */
const UNKNOWN = '\u0000unknown\u0000';
const GLOB = '\u0000glob\u0000';

/** The directory a glob can only match inside: `src/*.ts` → `src`, `*.log` → `.`. */
function globBase(pattern: string): string {
  const at = pattern.search(/[*?[]/);
  const slash = pattern.lastIndexOf('/', at);
  return slash < 0 ? '.' : pattern.slice(0, slash) || '/';
}

function firstComponent(raw: string): string {
  if (raw.startsWith(UNKNOWN) || raw.startsWith(GLOB)) return raw;
  if (raw.startsWith('/')) return raw;
  const first = raw.split('/').find((part) => part !== '' && part !== '.');
  return first === undefined || first === '..' ? raw : first;
}

/** Operands: the words after the options (`--` ends them); values of `withValue` short options skipped. */
function operandsOf(args: readonly string[], withValue = ''): string[] {
  const out: string[] = [];
  let optionsEnded = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? '';
    if (optionsEnded || !arg.startsWith('-') || arg === '-') {
      out.push(arg);
      continue;
    }
    if (arg === '--') {
      optionsEnded = true;
      continue;
    }
    if (arg.startsWith('--')) continue;
    const last = arg.charAt(arg.length - 1);
    if (arg.length === 2 && withValue.includes(last)) i++;
  }
  return out;
}

/** `time`, `nice`, `timeout N`, `command`, `nohup` change nothing about what a command touches. */
function peelHarmlessWrappers(argv: readonly string[]): readonly string[] {
  let current = argv;
  for (;;) {
    const name = programName(current[0]);
    if (name === 'time' || name === 'command' || name === 'nohup' || name === 'builtin')
      current = current.slice(1).filter((a, i) => i > 0 || !a.startsWith('-'));
    else if (name === 'nice') current = current.slice(current[1] === '-n' ? 3 : 1);
    else if (name === 'timeout')
      current = current
        .slice(1)
        .filter((a) => !a.startsWith('-'))
        .slice(1);
    else return current;
    if (current.length === 0) return current;
  }
}
