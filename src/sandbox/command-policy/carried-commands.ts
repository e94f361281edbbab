/*
 * Commands carried where a program will run them, besides wrappers and shells' `-c`: an option
 * named for a command (`npx -c 'text'`, `nodemon --exec 'text'`); a setting whose key names a
 * command (`PAGER=…`, `-o ProxyCommand=…`, `--config alias.x=!…`, apt's `Pre-Invoke::=…`); an
 * interpreter's exec-style calls (`os.execvp("rm", […])`, `exec "…"`, `pcntl_exec`, `spawn`); a
 * database shell's `.shell`/`\!`; make's `$(shell …)` and recipes. command-sites.ts reads each text
 * as shell text, so the floor and every rule judge what it runs; `escapes` marks those the
 * embedded-command rule flags (a shell escaped from a program), which a plain option does not.
 */
import { takesOperandsAsData } from './named-programs.js';
import { isScriptInterpreter } from './programs.js';
import { isWrapper, programName, SHELLS } from './wrappers.js';
import { regexUnion } from './regex-union.js';

export interface CarriedCommand {
  /** Shell text the program will run. */
  readonly text: string;
  /** A shell escaped from a program that is not a shell (embedded-command), not only an option's value. */
  readonly escapes: boolean;
}

/** Long options conventionally holding a command to run. */
const COMMAND_OPTIONS = new Set([
  'command',
  'cmd',
  'call',
  'exec',
  'execute',
  'run',
  'exec-command',
  'shell-command',
  'sh-exec',
]);

/**
 * `npx -c 'text'`, `nix-shell --run 'text'`, `xterm -e 'text'`: the values of `-c`, `-e` and
 * command-named long options of a program not known otherwise (wrappers and shells are peeled,
 * interpreters' `-c`/`-e` is their own code, data programs' options are data).
 */
export function commandOptionTexts(argv: readonly string[]): string[] {
  const program = programName(argv[0]);
  if (takesOperandsAsData(program) || SHELLS.has(program) || isScriptInterpreter(program) || isWrapper(program))
    return [];
  const texts: string[] = [];
  for (let i = 1; i < argv.length; i++) {
    // Past `--` too: `capsh -- -c 'text'` hands the rest to a shell.
    const arg = argv[i] ?? '';
    const long = /^--([a-z-]+)(?:=(.*))?$/s.exec(arg);
    if ((arg === '-c' || arg === '-e') && argv[i + 1] !== undefined) texts.push(argv[++i] ?? '');
    else if (long && COMMAND_OPTIONS.has(long[1] ?? '')) {
      const value = long[2] ?? argv[++i];
      if (value !== undefined) texts.push(value);
    }
  }
  return texts;
}

/**
 * A key naming a command its program runs: `PAGER`, `GIT_SSH_COMMAND`, `ProxyCommand`,
 * `core.editor`, `APT::Update::Pre-Invoke::`, `--use-compress-program`.
 */
const COMMAND_KEY =
  /(?:command|cmd|pager|editor|visual|invoke|exec|helper|program|hook|askpass|lessopen|lessclose|browser|git_ssh)$/i;
/** Keys whose value always runs, whatever it names. */
const HOOK_KEY = /(?:invoke|hook|proxycommand|localcommand|sshcommand|git_ssh|lessopen|lessclose)$/i;
/** Pagers and editors that only show or edit text. */
const PLAIN_VIEWER =
  /^\s*(?:cat|less|more|most|bat|delta|vi|vim|nvim|nano|emacs|code --wait|true|)(?:\s+-[A-Za-z-]+)*\s*$/;
const SHELL_SYNTAX = /[;&|`$<>()]/;

/**
 * `KEY=VALUE` words (arguments, option values, `-oKEY=VALUE`, environment assignments) whose key
 * names a command: the value as shell text, its `!` (a shell alias) or `|` (LESSOPEN) dropped.
 */
export function settingCommands(words: readonly string[]): CarriedCommand[] {
  const carried: CarriedCommand[] = [];
  for (const word of words) {
    const setting = /^(?:-[A-Za-z](?=[A-Za-z_]))?(--?)?([A-Za-z_][\w.:\-+]*?):*\+?=(.*)$/s.exec(word);
    if (!setting) continue;
    const key = (setting[2] ?? '').replace(/:+$/, '');
    const value = setting[3] ?? '';
    const alias = /(?:^|\.)alias\./i.test(key) && value.trimStart().startsWith('!');
    if (!alias && !COMMAND_KEY.test(key)) continue;
    const text = value.trimStart().replace(/^[!|]/, '');
    if (text.trim() === '') continue;
    carried.push({ text, escapes: alias || (!PLAIN_VIEWER.test(text) && (HOOK_KEY.test(key) || runsShell(text))) });
  }
  return carried;
}

/** Text that starts a shell or an interpreter, or holds shell syntax. */
function runsShell(text: string): boolean {
  const first = programName(text.trim().split(/\s+/)[0]);
  return SHELLS.has(first) || isScriptInterpreter(first) || SHELL_SYNTAX.test(text);
}

/**
 * Calls that run a command in perl, ruby, php, python, node, R, lua, tcl/expect and the JVM
 * languages: `system`, the `exec*`/`spawn*` families, `popen`, `pcntl_exec`, backticks' cousins.
 */
const EXEC_CALL = regexUnion(
  [
    /os\.(?:system|popen|exec[lv]p?e?|spawn[lv]p?e?|posix_spawnp?|execute)|subprocess\.\w+|pty\.spawn/,
    /commands\.getoutput|system2?|exec[lv]?p?e?|execSync|execFile(?:Sync)?|spawn(?:Sync)?|pcntl_exec/,
    /shell_exec|passthru|proc_open|popen|IO\.popen|Open3\.\w+|Process\.(?:spawn|start)/,
    /Kernel\.(?:exec|system|spawn)|io\.popen|Deno\.(?:run|Command)|Bun\.spawn(?:Sync)?|Runtime\.getRuntime\(\)\.exec/,
  ],
  { before: /\b/, after: /\b/, flags: 'g' },
);
const STRING_LITERAL = /"((?:\\.|[^"\\])*)"|'((?:\\.|[^'\\])*)'/g;
/** Modules whose methods run processes: `require("child_process").spawn`, `subprocess.run`, `Kernel.exec`. */
const PROCESS_MODULE = /child_process|subprocess|\bos\b|\bpty\b|Kernel|Open3|Runtime|Deno|Bun|Process|IO\b/;
/** Languages where backticks, `%x{}` and `qx{}` run shell text. */
const BACKTICK_LANGUAGE = /^(?:ruby|perl|php|irb)/;
const INLINE_SHELL = /`([^`]+)`|%x\{([^}]*)\}|qx\{([^}]*)\}|qx\(([^)]*)\)/g;

/**
 * What an interpreter's code hands to its exec-style calls, as shell text: the string literals
 * of each call's arguments as words (`os.execvp("rm", ["rm", "-rf", "/"])` → `'rm' 'rm' '-rf' '/'`), a
 * bareword call's rest of statement (`spawn /bin/sh`), backticks, `%x{}` and `qx{}`.
 */
export function codeCommands(code: string, interpreter: string): CarriedCommand[] {
  const carried: CarriedCommand[] = [];
  const processModule = PROCESS_MODULE.test(code);
  for (const match of code.matchAll(EXEC_CALL)) {
    const at = match.index ?? 0;
    // A method of some other object (`/re/.exec(s)`, `platform.system()`) runs nothing.
    if (code.charAt(at - 1) === '.' && !processModule) continue;
    const after = code.slice(at + match[0].length);
    const argumentsText = callArguments(after);
    if (argumentsText === undefined) continue;
    const literals = [...argumentsText.matchAll(STRING_LITERAL)].map((literal) =>
      unescapeLiteral(literal[1] ?? literal[2] ?? ''),
    );
    // One string is shell text (`system("rm -rf /")`); several are an argv (`spawn("sh", ["-c", "…"])`), each one word.
    const text =
      literals.length === 0
        ? argumentsText.trim()
        : literals.length === 1
          ? (literals[0] ?? '')
          : literals.map(quoteWord).join(' ');
    if (text.trim() !== '') carried.push({ text, escapes: true });
  }
  if (!BACKTICK_LANGUAGE.test(interpreter)) return carried;
  for (const match of code.matchAll(INLINE_SHELL)) {
    carried.push({ text: match[1] ?? match[2] ?? match[3] ?? match[4] ?? '', escapes: true });
  }
  return carried;
}

/** `(…)` balanced, or a bareword call's rest of statement; undefined when the name is not called. */
function callArguments(after: string): string | undefined {
  const start = /^\s*/.exec(after)?.[0].length ?? 0;
  const first = after.charAt(start);
  if (first === '(') {
    let depth = 0;
    for (let i = start; i < after.length; i++) {
      const c = after.charAt(i);
      if (c === '(') depth++;
      else if (c === ')' && --depth === 0) return after.slice(start + 1, i);
    }
    return after.slice(start + 1);
  }
  if (start === 0 || first === '' || /[=.,)}\]:]/.test(first)) return undefined;
  const end = after.slice(start).search(/[;\n\]}]/);
  return end < 0 ? after.slice(start) : after.slice(start, start + end);
}

function quoteWord(word: string): string {
  return `'${word.replace(/'/g, "'\\''")}'`;
}

function unescapeLiteral(text: string): string {
  return text.replace(/\\(.)/g, (_m, c: string) => (c === 'n' ? '\n' : c === 't' ? '\t' : c));
}

const DATABASE_SHELLS = new Set(['sqlite3', 'sqlite', 'psql', 'mysql', 'mariadb', 'duckdb']);
/** sqlite's `.shell`/`.system`, psql's and mysql's `\!`, mysql's `system`: a line the shell runs. */
const DATABASE_ESCAPE = /(?:^|[\n;])\s*(?:\.shell|\.system|\\!|system)\s+([^\n;]*)|\\!\s*([^\n]*)/g;

export function isDatabaseShell(program: string): boolean {
  return DATABASE_SHELLS.has(program);
}

/** The shell escapes of a database shell's arguments and input. */
export function databaseCommands(texts: readonly string[]): CarriedCommand[] {
  return texts.flatMap((text) =>
    [...text.matchAll(DATABASE_ESCAPE)].map((match) => ({ text: match[1] ?? match[2] ?? '', escapes: true })),
  );
}

/** `make --eval 'text'` / `-E text`: its `$(shell …)` calls and recipe lines run in a shell. */
export function makeEvalCommands(argv: readonly string[]): CarriedCommand[] {
  const program = programName(argv[0]);
  if (program !== 'make' && program !== 'gmake') return [];
  const texts: string[] = [];
  for (let i = 1; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === '--eval' || arg === '-E') texts.push(argv[++i] ?? '');
    else if (arg.startsWith('--eval=')) texts.push(arg.slice(7));
    else if (/^-E./.test(arg)) texts.push(arg.slice(2));
  }
  return texts
    .flatMap((text) => [
      ...[...text.matchAll(/\$[({]shell\s+([^)}]*)[)}]/g)].map((match) => match[1] ?? ''),
      ...[...text.matchAll(/\n\t[-@+]*([^\n]*)/g)].map((match) => match[1] ?? ''),
    ])
    .map((text) => ({ text, escapes: true }));
}
