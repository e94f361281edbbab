/*
 * Every simple command a command line may run, wherever it sits: in a pipeline, after `&&`,
 * `;` or `||`, in a subshell, in $(…), backticks or <(…), in a function body, behind
 * `sudo`/`env`/`nice`, or in shell text handed to `sh -c`, `eval`, `su -c`, `ssh`, or fed to a
 * shell's stdin (`echo '…' | sh`, here-documents). Each becomes a CommandSite, with the context
 * the rules need: the views through its wrappers, what feeds its stdin, what it substitutes.
 * The command line is read twice, as written and de-obfuscated; the work is bounded, and
 * whatever overflows a bound makes the analysis `tooComplex`.
 */
import { deobfuscate, withoutQuotes } from './deobfuscate.js';
import { readsProgramFromStdin } from './programs.js';
import {
  parseShell,
  renderScript,
  type Pipeline,
  type Redirect,
  type Script,
  type ShellNode,
  type SimpleCommand,
} from './shell-syntax.js';
import { resolvePath } from './targets.js';
import { peelWrapper, programName, stripPrelude } from './wrappers.js';

/** A command's argv as seen through zero or more wrappers. */
export interface CommandView {
  readonly argv: readonly string[];
  /** The last path component of argv[0]: `/usr/bin/rm` → `rm`. */
  readonly program: string;
  /** argv without argv[0]. */
  readonly args: readonly string[];
}

export interface CommandSite {
  /** The argv as written, then as seen through each wrapper (`sudo env X=1 rm` → … → `rm`). */
  readonly views: readonly CommandView[];
  /** Its own redirections and those of the groups around it. */
  readonly redirects: readonly Redirect[];
  /**
   * The nearest commands earlier in its pipeline (and in the pipelines around its group): what
   * feeds its stdin. A function, because few rules ask and building it for every command costs.
   */
  readonly upstream: () => readonly CommandSite[];
  /** Commands run to expand its words: $(…), `…`, <(…), >(…), here-document bodies. */
  readonly substituted: readonly CommandSite[];
  /** Names of the shell functions whose bodies hold it. */
  readonly functions: readonly string[];
  /** Runs beside its caller: in a pipeline of two or more, or in the background. */
  readonly concurrent: boolean;
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
}

export const ANALYSIS_LIMITS = {
  /**
   * Characters read of one text; the rest is cut at a blank and the command is too complex.
   * The runner hands the command to `bash -c` as one argument, and Linux refuses an argument
   * longer than 128 KiB (MAX_ARG_STRLEN), so every command that can run is read whole.
   */
  maxLength: 131_072,
  /** Nesting of (), {}, $(), `` and <() within one text. */
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
  const deobfuscated = walker.bounded(deobfuscate(asWritten));
  for (const reading of new Set([asWritten, deobfuscated])) walker.read(reading, ROOT_CONTEXT);
  return {
    commands: walker.commands,
    pipelines: walker.pipelines,
    wholeTexts: () => [...walker.texts, withoutQuotes(deobfuscated), ...walker.scripts.map(renderScript)],
    tooComplex: walker.tooComplex,
  };
}

interface WalkContext {
  readonly shellTextDepth: number;
  readonly functions: readonly string[];
  /** Computed only when a rule asks: most commands never need it. */
  readonly upstream: () => readonly CommandSite[];
  /** The simple command piped straight into this one. */
  readonly feeder: CommandSite | undefined;
  readonly redirects: readonly Redirect[];
  readonly concurrent: boolean;
  readonly cwdIsRoot: boolean;
}

const NOTHING_UPSTREAM = (): readonly CommandSite[] => [];

const ROOT_CONTEXT: WalkContext = {
  shellTextDepth: 0,
  functions: [],
  upstream: NOTHING_UPSTREAM,
  feeder: undefined,
  redirects: [],
  concurrent: false,
  cwdIsRoot: false,
};

class CommandWalker {
  readonly commands: CommandSite[] = [];
  readonly pipelines: PipelineSite[] = [];
  /** Every text read, and what the reader made of it. */
  readonly texts: string[] = [];
  readonly scripts: Script[] = [];
  tooComplex = false;
  private readonly shellTextsRead = new Set<string>();
  private charactersRead = 0;

  /** `text`, cut at the last blank before `maxLength` when longer (never inside a word). */
  bounded(text: string): string {
    if (text.length <= ANALYSIS_LIMITS.maxLength) return text;
    this.tooComplex = true;
    return text.slice(0, lastBlankBefore(text, ANALYSIS_LIMITS.maxLength));
  }

  read(text: string, context: WalkContext): CommandSite[] {
    this.charactersRead += text.length;
    if (this.charactersRead > ANALYSIS_LIMITS.maxCharactersRead) {
      this.tooComplex = true;
      return [];
    }
    const { script, truncated } = parseShell(text, ANALYSIS_LIMITS.maxNesting);
    this.tooComplex ||= truncated;
    this.texts.push(text);
    this.scripts.push(script);
    return this.script(script, context);
  }

  private script(script: Script, context: WalkContext): CommandSite[] {
    const sites: CommandSite[] = [];
    let cwdIsRoot = context.cwdIsRoot;
    for (const pipeline of script.pipelines) {
      const pipelineSite: PipelineSite = { pipeline };
      this.pipelines.push(pipelineSite);
      const concurrent = context.concurrent || pipeline.background || pipeline.nodes.length > 1;
      const members: CommandSite[] = [];
      let feeder = context.feeder;
      for (const node of pipeline.nodes) {
        const upstream = earlierMembers(context.upstream, members, members.length);
        const nodeSites = this.node(node, { ...context, upstream, feeder, concurrent, cwdIsRoot }, pipelineSite);
        append(sites, nodeSites);
        append(members, nodeSites);
        feeder = node.kind === 'simple' ? nodeSites[0] : undefined;
      }
      if (pipeline.nodes.length === 1) cwdIsRoot = workingDirectoryIsRootAfter(feeder, cwdIsRoot);
    }
    return sites;
  }

  private node(node: ShellNode, context: WalkContext, pipeline: PipelineSite): CommandSite[] {
    switch (node.kind) {
      case 'simple':
        return this.simple(node, context, pipeline);
      case 'group':
        return this.script(node.body, { ...context, redirects: [...context.redirects, ...node.redirects] });
      case 'function':
        return this.node(node.body, { ...context, functions: [...context.functions, node.name] }, pipeline);
    }
  }

  private simple(command: SimpleCommand, context: WalkContext, pipeline: PipelineSite): CommandSite[] {
    const substituted: CommandSite[] = [];
    const nestedScripts = scriptsNestedIn(command);
    if (nestedScripts.length > 0) {
      const expansion: WalkContext = { ...context, upstream: NOTHING_UPSTREAM, feeder: undefined, redirects: [] };
      for (const nested of nestedScripts) append(substituted, this.script(nested, expansion));
    }

    const argv = command.words.some((w) => w.text.includes('{')) ? command.words.flatMap((w) => expandBraces(w.text)) : command.words.map((w) => w.text);
    const { views, shellTexts } = this.views(argv);
    const site: CommandSite = {
      views: views.map((view) => ({ argv: view, program: programName(view[0]), args: view.slice(1) })),
      redirects: context.redirects.length === 0 ? command.redirects : [...context.redirects, ...command.redirects],
      upstream: context.upstream,
      substituted,
      functions: context.functions,
      concurrent: context.concurrent,
      cwdIsRoot: context.cwdIsRoot,
      pipeline,
    };
    this.commands.push(site);

    if (readsProgramFromStdin(views[views.length - 1] ?? [])) shellTexts.push(...stdinShellTexts(command, context.feeder));
    const sites = [site, ...substituted];
    for (const text of shellTexts) append(sites, this.shellText(text, context));
    return sites;
  }

  /** The argv and what each wrapper runs, plus the shell texts wrappers hand to a shell. */
  private views(argv: readonly string[]): { views: (readonly string[])[]; shellTexts: string[] } {
    const views: (readonly string[])[] = [argv];
    const shellTexts: string[] = [];
    let current = stripPrelude(argv);
    if (current !== argv) views.push(current);
    for (let peeled = 0; ; peeled++) {
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
    return { views, shellTexts };
  }

  private shellText(text: string, context: WalkContext): CommandSite[] {
    if (context.shellTextDepth >= ANALYSIS_LIMITS.maxShellTextDepth) {
      this.tooComplex = true;
      return [];
    }
    const key = `${context.cwdIsRoot}\u0000${context.functions.join('\u0000')}\u0000${text}`;
    if (this.shellTextsRead.has(key)) return [];
    this.shellTextsRead.add(key);
    const inner: WalkContext = { ...context, shellTextDepth: context.shellTextDepth + 1, upstream: NOTHING_UPSTREAM, feeder: undefined, redirects: [] };
    const sites: CommandSite[] = [];
    const asWritten = this.bounded(text);
    for (const reading of new Set([asWritten, this.bounded(deobfuscate(asWritten))])) append(sites, this.read(reading, inner));
    return sites;
  }
}

/** $(…), `…`, <(…) and >(…) in the words and redirections, and those in here-document bodies. */
function scriptsNestedIn(command: SimpleCommand): Script[] {
  const scripts: Script[] = [];
  for (const word of command.words) append(scripts, word.nested);
  for (const redirect of command.redirects) {
    append(scripts, redirect.target.nested);
    if (redirect.bodyNested) append(scripts, redirect.bodyNested);
  }
  return scripts;
}

/** What a shell reading stdin runs: here-documents, here-strings, `echo …`/`printf …` piped in. */
function stdinShellTexts(command: SimpleCommand, feeder: CommandSite | undefined): string[] {
  const texts: string[] = [];
  for (const redirect of command.redirects) {
    if (redirect.op === '<<<') texts.push(redirect.target.text);
    if (redirect.body !== undefined) texts.push(redirect.body);
  }
  const fed = feeder?.views.at(-1);
  const program = fed?.program;
  if (fed && (program === 'echo' || program === 'printf')) {
    let args = fed.args;
    if (program === 'echo') while (/^-[neE]+$/.test(args[0] ?? '')) args = args.slice(1);
    texts.push(decodeEscapes(args.join(' ')));
  }
  for (const redirect of feeder?.redirects ?? []) {
    if (redirect.op === '<<<') texts.push(redirect.target.text);
    if (redirect.body !== undefined) texts.push(redirect.body);
  }
  return texts;
}

/** `\n`, `\t`, `\\`, `\x41`, `\0101`: the escapes `echo -e` and `printf` understand. */
function decodeEscapes(text: string): string {
  return text.replace(/\\(x[0-9a-fA-F]{1,2}|0[0-7]{0,3}|[abefnrtv\\])/g, (_match, escape: string) => {
    if (escape.startsWith('x')) return String.fromCharCode(Number.parseInt(escape.slice(1), 16));
    if (escape.startsWith('0')) return String.fromCharCode(Number.parseInt(escape, 8));
    return SIMPLE_ESCAPES[escape] ?? escape;
  });
}

const SIMPLE_ESCAPES: Record<string, string> = { a: '\x07', b: '\b', e: '\x1b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v', '\\': '\\' };

/** After `cd /` (or `pushd /`) relative paths start at the root; after any other `cd` they do not. */
function workingDirectoryIsRootAfter(site: CommandSite | undefined, before: boolean): boolean {
  const view = site?.views.at(-1);
  if (view?.program !== 'cd' && view?.program !== 'pushd') return before;
  const target = view.args.find((arg) => !arg.startsWith('-'));
  if (target === undefined) return false;
  const path = resolvePath(target, before);
  return path.anchor === 'root' && path.parts.length === 0;
}

/** One level of brace expansion, `{rm,-rf,/}` → `rm -rf /`: enough to see through the trick. */
function expandBraces(word: string): string[] {
  const open = word.indexOf('{');
  const close = word.indexOf('}');
  if (open < 0 || close < open || word.indexOf('{', open + 1) >= 0 || word.indexOf('}', close + 1) >= 0) return [word];
  const items = word.slice(open + 1, close).split(',');
  if (items.length < 2 || items.length > MAX_BRACE_ITEMS) return [word];
  return items.map((item) => word.slice(0, open) + item + word.slice(close + 1));
}

const MAX_BRACE_ITEMS = 64;

/** The last `maxUpstream` of `members[0, end)`, after those upstream of the enclosing group. */
function earlierMembers(outer: () => readonly CommandSite[], members: readonly CommandSite[], end: number): () => readonly CommandSite[] {
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
