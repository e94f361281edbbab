/*
 * Every simple command a command line may run, wherever it sits: in a pipeline, after `&&`,
 * `;` or `||`, in a subshell, in $(…), backticks or <(…), in a function body or a loop, behind
 * `sudo`/`env`/`nice`, or in shell text handed to `sh -c`, `eval`, `su -c`, `ssh`, or fed to a
 * shell's stdin (`echo '…' | sh`, here-documents). Each becomes a CommandSite with the context
 * the rules need: its argv as bash will expand it (src/sandbox/command-policy/word-expansion.ts)
 * and through its wrappers, what feeds its stdin, what it substitutes, and whether the code it
 * runs can be read at all. The command line is read twice, as written and de-obfuscated; the
 * work is bounded, and whatever overflows a bound makes the analysis `tooComplex`.
 */
import {
  codeCommands,
  commandOptionTexts,
  databaseCommands,
  isDatabaseShell,
  makeEvalCommands,
  settingCommands,
  type CarriedCommand,
} from './carried-commands.js';
import { deobfuscate, withoutQuotes } from './deobfuscate.js';
import { globCandidates, MAX_OPERAND_COMMANDS, operandCommands } from './named-programs.js';
import { inlineCode, isScriptInterpreter, readsProgramFromStdin } from './programs.js';
import { avoidingMisreadings, readScript } from './read-script.js';
import {
  renderScript,
  type Pipeline,
  type Redirect,
  type Script,
  type ShellNode,
  type SimpleCommand,
  type Word,
  type WordPart,
} from './shell-script.js';
import { resolvePath } from './targets.js';
import { expandWord, FRESH_SHELL, isEnvironmentParameter, knownText, type ShellVariables } from './word-expansion.js';
import { peelWrapper, programName, SHELLS, stripPrelude } from './wrappers.js';

/** A command's argv as seen through zero or more wrappers. */
export interface CommandView {
  readonly argv: readonly string[];
  /** The last path component of argv[0]: `/usr/bin/rm` → `rm`. */
  readonly program: string;
  /** argv without argv[0]. */
  readonly args: readonly string[];
}

/** A redirection with its target expanded. */
export interface SiteRedirect {
  readonly op: string;
  readonly fd?: string;
  readonly target?: string;
  /** A here-document's or here-string's text. */
  readonly text?: string;
}

export interface CommandSite {
  /**
   * The argv as written, then as seen through each wrapper (`sudo env X=1 rm` → … → `rm`), then
   * every suffix that starts with a program some rule judges (`cpulimit -l 5 rm -rf /` → `rm -rf /`).
   */
  readonly views: readonly CommandView[];
  /** An interpreter's program text: `python3 -c '…'`, or fed to its stdin (a here-string, `echo '…' | perl`). */
  readonly code: readonly string[];
  /** Commands it hands to something that runs them: settings, command options, exec-style calls, database shell escapes. */
  readonly carried: readonly CarriedCommand[];
  /** Its own redirections and those of the groups around it. */
  readonly redirects: readonly SiteRedirect[];
  /**
   * The nearest commands earlier in its pipeline (and in the pipelines around its group): what
   * feeds its stdin. A function, because few rules ask and building it for every command costs.
   */
  readonly upstream: () => readonly CommandSite[];
  /** Commands run to expand its words: $(…), `…`, <(…), >(…), here-document bodies. */
  readonly substituted: readonly CommandSite[];
  /** Arguments whose value is known only at run time (a substitution's output, an unknown variable). */
  readonly dynamic: ReadonlySet<string>;
  /** The code it runs cannot be read before it runs: a program name, `sh -c`/`eval` text or a shell's stdin made at run time. */
  readonly unreadableCode: boolean;
  /** Names of the shell functions whose bodies hold it. */
  readonly functions: readonly string[];
  /** Runs beside its caller: in a pipeline of two or more, or in the background. */
  readonly concurrent: boolean;
  /** Sits in the body of a loop nothing in its header ends (`while true`, `for ((;;))`). */
  readonly unboundedLoop: boolean;
  /** An earlier `cd /` made the root its working directory. */
  readonly cwdIsRoot: boolean;
  readonly pipeline: PipelineSite;
}

/** One pipeline of the command line or of a text inside it, for operator rules. */
export interface PipelineSite {
  readonly pipeline: Pipeline;
}

export interface CommandAnalysis {
  readonly commands: readonly CommandSite[];
  readonly pipelines: readonly PipelineSite[];
  /**
   * The whole command line as written, de-obfuscated, without quotes, re-rendered without
   * quotes, and every shell text found in it. Rendered on demand: only operator rules read them.
   */
  readonly wholeTexts: () => readonly string[];
  /** Some part was too long or too deeply nested to read. */
  readonly tooComplex: boolean;
  /** The shell grammar could not parse the command line, or a shell text inside it. */
  readonly unparseable: boolean;
}

export const ANALYSIS_LIMITS = {
  /**
   * Characters read of one text; the rest is cut at a blank and the command is too complex.
   * The runner hands the command to `bash -c` as one argument, and Linux refuses an argument
   * longer than 128 KiB (MAX_ARG_STRLEN), so every command that can run is read whole.
   */
  maxLength: 131_072,
  /** Nesting of groups, substitutions and function bodies within one text. */
  maxNesting: 16,
  /** Shell text within shell text: `bash -c "sh -c '…'"`. */
  maxShellTextDepth: 8,
  /** Characters read in all, over every reading and every shell text found. */
  maxCharactersRead: 524_288,
  /** Wrappers around one command: `sudo env nice nohup …`. */
  maxWrappers: 16,
  /** Earlier pipeline members a command remembers as its upstream. */
  maxUpstream: 16,
} as const;

export function analyzeCommand(command: string): CommandAnalysis {
  const walker = new CommandWalker();
  const asWritten = walker.bounded(command);
  walker.read(asWritten, ROOT_CONTEXT, true);
  // Where the grammar failed, also read the text with its known misreadings avoided, so the floor still sees what bash would run.
  const repaired = walker.unparseable ? avoidingMisreadings(asWritten) : asWritten;
  if (repaired !== asWritten) walker.read(repaired, ROOT_CONTEXT, false);
  const deobfuscated = walker.bounded(deobfuscate(asWritten));
  if (deobfuscated !== asWritten) walker.read(deobfuscated, ROOT_CONTEXT, false);
  return {
    commands: walker.commands,
    pipelines: walker.pipelines,
    wholeTexts: () => [...walker.texts, withoutQuotes(deobfuscated), ...walker.scripts.map(renderScript)],
    tooComplex: walker.tooComplex,
    unparseable: walker.unparseable,
  };
}

interface WalkContext {
  readonly shellTextDepth: number;
  readonly nesting: number;
  readonly functions: readonly string[];
  /** Computed only when a rule asks: most commands never need it. */
  readonly upstream: () => readonly CommandSite[];
  /** The simple command piped straight into this one. */
  readonly feeder: CommandSite | undefined;
  /** A group (a loop, a subshell) is piped into this command: what it prints cannot be read. */
  readonly fedByGroup: boolean;
  readonly redirects: readonly SiteRedirect[];
  readonly concurrent: boolean;
  readonly unboundedLoop: boolean;
  readonly cwdIsRoot: boolean;
  /** Whether a parse failure here means the policy cannot read the command (not for our own re-readings). */
  readonly strict: boolean;
}

const NOTHING_UPSTREAM = (): readonly CommandSite[] => [];

const ROOT_CONTEXT: WalkContext = {
  shellTextDepth: 0,
  nesting: 0,
  functions: [],
  upstream: NOTHING_UPSTREAM,
  feeder: undefined,
  fedByGroup: false,
  redirects: [],
  concurrent: false,
  unboundedLoop: false,
  cwdIsRoot: false,
  strict: true,
};

/** The variables a walk has learned, mutable within one scope. */
class Scope implements ShellVariables {
  constructor(
    readonly values: Map<string, string>,
    readonly positional: readonly string[] | undefined,
  ) {}

  static fresh(positional: readonly string[] | undefined = FRESH_SHELL.positional): Scope {
    return new Scope(new Map(FRESH_SHELL.values), positional);
  }

  /** Subshells, substitutions and pipeline members: what they assign does not come back. */
  child(): Scope {
    return new Scope(new Map(this.values), this.positional);
  }

  assign(name: string, value: string | undefined): void {
    if (value === undefined) this.values.delete(name);
    else this.values.set(name, value);
  }
}

class CommandWalker {
  readonly commands: CommandSite[] = [];
  readonly pipelines: PipelineSite[] = [];
  /** Every text read, and what the reader made of it. */
  readonly texts: string[] = [];
  readonly scripts: Script[] = [];
  tooComplex = false;
  unparseable = false;
  private readonly shellTextsRead = new Set<string>();
  private charactersRead = 0;

  /** `text`, cut at the last blank before `maxLength` when longer (never inside a word). */
  bounded(text: string): string {
    if (text.length <= ANALYSIS_LIMITS.maxLength) return text;
    this.tooComplex = true;
    return text.slice(0, lastBlankBefore(text, ANALYSIS_LIMITS.maxLength));
  }

  read(text: string, context: WalkContext, strict: boolean, scope: Scope = Scope.fresh()): CommandSite[] {
    this.charactersRead += text.length;
    if (this.charactersRead > ANALYSIS_LIMITS.maxCharactersRead) {
      this.tooComplex = true;
      return [];
    }
    const read = readScript(text);
    if (strict && read.unparseable) this.unparseable = true;
    this.tooComplex ||= read.truncated;
    this.texts.push(text);
    this.scripts.push(read.script);
    return this.script(read.script, { ...context, strict }, scope);
  }

  private script(script: Script, context: WalkContext, scope: Scope): CommandSite[] {
    if (context.nesting > ANALYSIS_LIMITS.maxNesting) {
      this.tooComplex = true;
      return [];
    }
    const sites: CommandSite[] = [];
    let cwdIsRoot = context.cwdIsRoot;
    for (const pipeline of script.pipelines) {
      const pipelineSite: PipelineSite = { pipeline };
      this.pipelines.push(pipelineSite);
      const concurrent = context.concurrent || pipeline.background || pipeline.nodes.length > 1;
      const members: CommandSite[] = [];
      let feeder = context.feeder;
      let fedByGroup = context.fedByGroup;
      for (const node of pipeline.nodes) {
        const upstream = earlierMembers(context.upstream, members, members.length);
        const memberScope = pipeline.nodes.length > 1 ? scope.child() : scope;
        const nodeSites = this.node(
          node,
          { ...context, upstream, feeder, fedByGroup, concurrent, cwdIsRoot },
          pipelineSite,
          memberScope,
        );
        append(sites, nodeSites);
        append(members, nodeSites);
        feeder = node.kind === 'simple' ? nodeSites[0] : undefined;
        fedByGroup = node.kind !== 'simple';
      }
      if (pipeline.nodes.length === 1) cwdIsRoot = workingDirectoryIsRootAfter(feeder, cwdIsRoot);
    }
    return sites;
  }

  private node(node: ShellNode, context: WalkContext, pipeline: PipelineSite, scope: Scope): CommandSite[] {
    switch (node.kind) {
      case 'simple':
        return this.simple(node, context, pipeline, scope);
      case 'group': {
        const inner: WalkContext = {
          ...context,
          nesting: context.nesting + 1,
          redirects: [...context.redirects, ...node.redirects.map((r) => siteRedirect(r, scope))],
          unboundedLoop: context.unboundedLoop || node.loop?.unbounded === true,
        };
        const headerSites = this.expansionSites(node.header.flatMap(wordScripts), inner, scope);
        // The loop variable takes values this reading does not follow.
        if (node.loop?.variable !== undefined) scope.assign(node.loop.variable, undefined);
        return [...headerSites, ...this.script(node.body, inner, node.subshell ? scope.child() : scope)];
      }
      case 'function':
        // Positional parameters in a function body are its arguments: unknown here.
        return this.node(
          node.body,
          { ...context, nesting: context.nesting + 1, functions: [...context.functions, node.name] },
          pipeline,
          new Scope(new Map(scope.values), undefined),
        );
    }
  }

  private simple(command: SimpleCommand, context: WalkContext, pipeline: PipelineSite, scope: Scope): CommandSite[] {
    const nested = [
      ...command.words.flatMap(wordScripts),
      ...command.assignments.flatMap((a) => [
        ...(a.value ? wordScripts(a.value) : []),
        ...(a.array ?? []).flatMap(wordScripts),
      ]),
      ...command.redirects.flatMap((r) => [
        ...(r.target ? wordScripts(r.target) : []),
        ...(r.hereDocument?.parts ?? []).flatMap(partScripts),
      ]),
    ];
    const substituted = this.expansionSites(nested, context, scope);

    const commandScope = command.words.length > 0 && command.assignments.length > 0 ? scope.child() : scope;
    for (const assignment of command.assignments)
      commandScope.assign(assignment.name, assignmentValue(assignment, scope));

    const dynamic = new Set<string>();
    const globbed = new Set<string>();
    const argv: string[] = [];
    const prompts: (string | undefined)[] = [];
    for (const word of command.words) {
      const expanded = expandWord(word, commandScope);
      append(prompts, expanded.prompts);
      for (const field of expanded.fields) {
        argv.push(field);
        if (expanded.dynamic) dynamic.add(field);
        if (expanded.glob) globbed.add(field);
      }
    }
    const redirects = command.redirects.map((r) => siteRedirect(r, commandScope));
    const { views, shellTexts, last } = this.views(argv, globbed);
    const hereDocumentDynamic = command.redirects.some(
      (r) => r.hereDocument?.expands && r.hereDocument.parts.some((p) => p.kind !== 'text' && !isWellKnownParameter(p)),
    );
    const stdinProgram = views.some(readsProgramFromStdin);
    const lastProgram = programName(last[0]);
    const readsStdin = stdinProgram || isDatabaseShell(lastProgram);
    const stdin = readsStdin
      ? stdinShellTexts(redirects, context.feeder, context.fedByGroup)
      : { texts: [], unreadable: false };
    const stdinIsShell = views.some((view) => SHELLS.has(programName(view[0])) && readsProgramFromStdin(view));
    const code = [
      ...views.flatMap((view) => inlineCode(programName(view[0]), view.slice(1)) ?? []),
      ...(stdinProgram && !stdinIsShell && isScriptInterpreter(lastProgram) ? stdin.texts : []),
    ];
    const assignments = command.assignments.flatMap((a) => {
      const value = assignmentValue(a, commandScope);
      return value === undefined ? [] : [`${a.name}=${value}`];
    });
    const carried = uniqueCarried([
      ...settingCommands(assignments),
      ...views.flatMap((view) => [
        ...commandOptionTexts(view).map((text) => ({ text, escapes: false })),
        // git's own settings are the git-runs-command rule's to judge; their text is still read.
        ...settingCommands(view.slice(1)).map((command) =>
          programName(view[0]) === 'git' ? { ...command, escapes: false } : command,
        ),
        ...makeEvalCommands(view),
        ...(isDatabaseShell(programName(view[0])) ? databaseCommands(view.slice(1)) : []),
      ]),
      ...(isDatabaseShell(lastProgram) ? databaseCommands(stdin.texts) : []),
      ...code.flatMap((text) => codeCommands(text, lastProgram)),
    ]);
    const unreadableCode =
      views.some((view) => isDynamicProgram(view[0], dynamic)) ||
      shellTexts.some((text) => [...dynamic].some((field) => field !== '' && text.includes(field))) ||
      (stdinProgram && (stdin.unreadable || hereDocumentDynamic)) ||
      sourcesRunTimeText(last, dynamic) ||
      prompts.some((prompt) => prompt === undefined);

    const site: CommandSite = {
      views: views.map((view) => ({ argv: view, program: programName(view[0]), args: view.slice(1) })),
      code,
      carried,
      redirects: context.redirects.length === 0 ? redirects : [...context.redirects, ...redirects],
      upstream: context.upstream,
      substituted,
      dynamic,
      unreadableCode,
      functions: context.functions,
      concurrent: context.concurrent,
      unboundedLoop: context.unboundedLoop,
      cwdIsRoot: context.cwdIsRoot,
      pipeline,
    };
    this.commands.push(site);
    if (command.words.length === 0) return [site, ...substituted];
    if (command.assignments.length === 0) learnFrom(last, scope);

    const sites = [site, ...substituted];
    const positional = shellPositional(last);
    for (const text of [...shellTexts, ...(stdinIsShell ? stdin.texts : [])])
      append(sites, this.shellText(text, context, positional));
    // What a program will run is read for what it shows, not held to the grammar: `ProxyCommand=;sh` is not bash's to parse.
    for (const { text } of carried)
      append(sites, this.shellText(text, { ...context, strict: false }, FRESH_SHELL.positional));
    // `${x@P}` runs the substitutions in x's value: read the value as shell text.
    for (const prompt of prompts)
      if (prompt !== undefined && /\$\(|`/.test(prompt))
        append(sites, this.shellText(prompt, { ...context, strict: false }, FRESH_SHELL.positional));
    return sites;
  }

  /** The commands run to expand words: substitutions, here-document bodies. */
  private expansionSites(scripts: readonly Script[], context: WalkContext, scope: Scope): CommandSite[] {
    if (scripts.length === 0) return [];
    const expansion: WalkContext = {
      ...context,
      nesting: context.nesting + 1,
      upstream: NOTHING_UPSTREAM,
      feeder: undefined,
      fedByGroup: false,
      redirects: [],
    };
    return scripts.flatMap((nested) => this.script(nested, expansion, scope.child()));
  }

  /**
   * The argv and what each wrapper runs, then the commands in its operands (each followed through
   * its own wrappers), plus the shell texts wrappers hand to a shell; `last` is the innermost
   * command of the wrappers around the argv as written.
   */
  private views(
    argv: readonly string[],
    globbed: ReadonlySet<string>,
  ): { views: (readonly string[])[]; shellTexts: string[]; last: readonly string[] } {
    const views: (readonly string[])[] = [argv];
    const shellTexts: string[] = [];
    const last = this.follow(argv, globbed, views, shellTexts);
    const suffixes = operandCommands(last);
    if (suffixes.length > MAX_OPERAND_COMMANDS) this.tooComplex = true;
    for (const suffix of suffixes.slice(0, MAX_OPERAND_COMMANDS)) {
      views.push(suffix);
      this.follow(suffix, globbed, views, shellTexts);
    }
    return { views, shellTexts, last };
  }

  /** Peels the wrappers around `argv` into `views`; returns the innermost command. */
  private follow(
    argv: readonly string[],
    globbed: ReadonlySet<string>,
    views: (readonly string[])[],
    shellTexts: string[],
  ): readonly string[] {
    let current = stripPrelude(argv);
    if (current !== argv) views.push(current);
    for (let peeled = 0; ; peeled++) {
      // `/bin/r?` names every program its pattern matches: read the command as each of them.
      const program = current[0];
      if (program !== undefined && globbed.has(program)) {
        for (const candidate of globCandidates(program)) views.push([candidate, ...current.slice(1)]);
      }
      const layer = peelWrapper(current);
      if (!layer) break;
      if (peeled >= ANALYSIS_LIMITS.maxWrappers) {
        this.tooComplex = true;
        break;
      }
      if (layer.shellText !== undefined) shellTexts.push(layer.shellText);
      if (!layer.command) break;
      current = stripPrelude(layer.command);
      views.push(current);
    }
    return current;
  }

  private shellText(text: string, context: WalkContext, positional: readonly string[] | undefined): CommandSite[] {
    if (context.shellTextDepth >= ANALYSIS_LIMITS.maxShellTextDepth) {
      this.tooComplex = true;
      return [];
    }
    const key = `${context.cwdIsRoot}\u0000${context.functions.join('\u0000')}\u0000${text}`;
    if (this.shellTextsRead.has(key)) return [];
    this.shellTextsRead.add(key);
    const inner: WalkContext = {
      ...context,
      shellTextDepth: context.shellTextDepth + 1,
      nesting: 0,
      upstream: NOTHING_UPSTREAM,
      feeder: undefined,
      fedByGroup: false,
      redirects: [],
    };
    const sites: CommandSite[] = [];
    const asWritten = this.bounded(text);
    append(sites, this.read(asWritten, inner, context.strict, Scope.fresh(positional)));
    const deobfuscated = this.bounded(deobfuscate(asWritten));
    if (deobfuscated !== asWritten) append(sites, this.read(deobfuscated, inner, false, Scope.fresh(positional)));
    return sites;
  }
}

function uniqueCarried(carried: readonly CarriedCommand[]): CarriedCommand[] {
  const byText = new Map<string, CarriedCommand>();
  for (const command of carried) if (!byText.get(command.text)?.escapes) byText.set(command.text, command);
  return [...byText.values()];
}

/** `x=` is empty; `x=(…)` is not read; `x=$(…)` is known only at run time. */
function assignmentValue(assignment: SimpleCommand['assignments'][number], scope: ShellVariables): string | undefined {
  if (assignment.array) return undefined;
  return assignment.value ? knownText(assignment.value, scope) : '';
}

function siteRedirect(redirect: Redirect, scope: ShellVariables): SiteRedirect {
  const target = redirect.target ? expandWord(redirect.target, scope).fields.join(' ') : undefined;
  const text = redirect.op === '<<<' ? target : redirect.hereDocument?.body;
  return {
    op: redirect.op,
    ...(redirect.fd !== undefined ? { fd: redirect.fd } : {}),
    ...(target !== undefined && redirect.op !== '<<<' ? { target } : {}),
    ...(text !== undefined ? { text } : {}),
  };
}

function wordScripts(word: Word): Script[] {
  return word.parts.flatMap(partScripts);
}

function partScripts(part: WordPart): Script[] {
  switch (part.kind) {
    case 'substitution':
    case 'process':
      return [part.script];
    case 'parameter':
      return [...part.scripts, ...(part.operand ? wordScripts(part.operand) : [])];
    case 'arithmetic':
      return [...part.scripts];
    case 'text':
      return [];
  }
}

function isWellKnownParameter(part: WordPart): boolean {
  return part.kind === 'parameter' && isEnvironmentParameter(part.raw);
}

/** A program name the policy cannot read: made by a substitution, an unknown variable, a case game. */
function isDynamicProgram(program: string | undefined, dynamic: ReadonlySet<string>): boolean {
  return program !== undefined && dynamic.has(program);
}

/** `source <(…)`, `. /dev/stdin` fed at run time, `source "$x"`. */
function sourcesRunTimeText(argv: readonly string[], dynamic: ReadonlySet<string>): boolean {
  const program = programName(argv[0]);
  if (program !== 'source' && program !== '.') return false;
  const file = argv[1];
  return file === undefined || dynamic.has(file) || /^\/dev\/(?:stdin|fd\/)/.test(file);
}

/** What a shell reading stdin runs: here-documents, here-strings, `echo …`/`printf …` piped in. */
function stdinShellTexts(
  redirects: readonly SiteRedirect[],
  feeder: CommandSite | undefined,
  fedByGroup: boolean,
): { texts: string[]; unreadable: boolean } {
  const texts: string[] = [];
  for (const redirect of redirects) if (redirect.text !== undefined) texts.push(redirect.text);
  if (fedByGroup) return { texts, unreadable: true };
  const fileInput = redirects.some((r) => r.op === '<' && r.target !== undefined);
  if (!feeder) return { texts, unreadable: texts.length === 0 && fileInput ? isRunTimeInput(redirects) : false };
  const fed = feeder.views.at(-1);
  const program = fed?.program;
  if (fed && (program === 'echo' || program === 'printf') && !fed.args.some((arg) => feeder.dynamic.has(arg))) {
    let args = fed.args;
    if (program === 'echo') while (/^-[neE]+$/.test(args[0] ?? '')) args = args.slice(1);
    texts.push(decodeEscapes(args.join(' ')));
    return { texts, unreadable: false };
  }
  for (const redirect of feeder.redirects) if (redirect.text !== undefined) texts.push(redirect.text);
  const literalFeeder = program === 'cat' && fed !== undefined && operandsOf(fed.args).length === 0 && texts.length > 0;
  return { texts, unreadable: !literalFeeder };
}

/** `sh < /dev/tcp/…`, `bash < <(…)`: input that only exists when the command runs. */
function isRunTimeInput(redirects: readonly SiteRedirect[]): boolean {
  return redirects.some(
    (r) =>
      r.op === '<' &&
      r.target !== undefined &&
      (/^\/dev\/(?:tcp|udp|fd|stdin)\//.test(r.target) || r.target.startsWith('<(')),
  );
}

function operandsOf(args: readonly string[]): string[] {
  return args.filter((arg) => !arg.startsWith('-'));
}

/** `sh -c 'text' zero one two`: inside the text `$0` is `zero`, `$1` is `one`. */
function shellPositional(argv: readonly string[]): readonly string[] | undefined {
  const program = programName(argv[0]);
  if (!SHELLS.has(program)) return FRESH_SHELL.positional;
  const at = argv.findIndex((arg, i) => i > 0 && /^-[a-zA-Z]*c[a-zA-Z]*$/.test(arg));
  if (at < 0) return FRESH_SHELL.positional;
  return argv.slice(at + 3);
}

/** `read x`, `unset x`: what the shell learns from a command that assigns without `=`. */
function learnFrom(argv: readonly string[], scope: Scope): void {
  const program = programName(argv[0]);
  const names = argv.slice(1).filter((arg) => /^[A-Za-z_]\w*$/.test(arg));
  if (program === 'read' || program === 'mapfile' || program === 'readarray' || program === 'getopts') {
    for (const name of names) scope.assign(name, undefined);
  } else if (program === 'unset') {
    for (const name of names) scope.assign(name, '');
  }
}

/** `\n`, `\t`, `\\`, `\x41`, `\0101`: the escapes `echo -e` and `printf` understand. */
function decodeEscapes(text: string): string {
  return text.replace(/\\(x[0-9a-fA-F]{1,2}|0[0-7]{0,3}|[abefnrtv\\])/g, (_match, escape: string) => {
    if (escape.startsWith('x')) return String.fromCharCode(Number.parseInt(escape.slice(1), 16));
    if (escape.startsWith('0')) return String.fromCharCode(Number.parseInt(escape, 8));
    return SIMPLE_ESCAPES[escape] ?? escape;
  });
}

const SIMPLE_ESCAPES: Record<string, string> = {
  a: '\x07',
  b: '\b',
  e: '\x1b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
  v: '\v',
  '\\': '\\',
};

/** After `cd /` (or `pushd /`) relative paths start at the root; after any other `cd` they do not. */
function workingDirectoryIsRootAfter(site: CommandSite | undefined, before: boolean): boolean {
  const view = site?.views.at(-1);
  if (view?.program !== 'cd' && view?.program !== 'pushd') return before;
  const target = view.args.find((arg) => !arg.startsWith('-'));
  if (target === undefined) return false;
  const path = resolvePath(target, before);
  return path.anchor === 'root' && path.parts.length === 0;
}

/** The last `maxUpstream` of `members[0, end)`, after those upstream of the enclosing group. */
function earlierMembers(
  outer: () => readonly CommandSite[],
  members: readonly CommandSite[],
  end: number,
): () => readonly CommandSite[] {
  if (end === 0) return outer;
  return () => [...outer(), ...members.slice(Math.max(0, end - ANALYSIS_LIMITS.maxUpstream), end)];
}

/** The index of the last whitespace before `before`, or 0. */
function lastBlankBefore(text: string, before: number): number {
  for (let i = before - 1; i > 0; i--) {
    if (/\s/.test(text.charAt(i))) return i;
  }
  return 0;
}

function append<T>(into: T[], items: readonly T[]): void {
  for (const item of items) into.push(item);
}
