/*
 * Which programs run code they are handed (shells, script interpreters, `eval`, `source`) and
 * which reach the network: for the rules on code fed to a shell, on what goes out over the
 * network, and for reading `echo '…' | sh` and here-documents fed to a shell as shell text.
 */
import { SHELLS, programName } from './wrappers.js';
import { regexUnion } from './regex-union.js';

const SCRIPT_INTERPRETER = regexUnion(
  [
    /python[0-9.]*|pypy[0-9.]*|perl[0-9.]*|ruby[0-9.]*|node|nodejs|bun|deno|php[0-9.]*|lua[0-9.]*|luajit/,
    /tclsh[0-9.]*|wish|expect|R|Rscript|julia|jrunscript|jjs|guile|gjs|qjs|osascript|pwsh|powershell|jshell|irb/,
  ],
  { before: /^/, after: /$/ },
);

/** Programs that run source text they are given: shells, script interpreters, `eval`, `source`, `.`. */
export function runsCode(program: string): boolean {
  return (
    SHELLS.has(program) ||
    SCRIPT_INTERPRETER.test(program) ||
    program === 'eval' ||
    program === 'source' ||
    program === '.'
  );
}

/** Programs whose output comes from the network. */
export const DOWNLOADERS: ReadonlySet<string> = new Set([
  'curl',
  'wget',
  'wget2',
  'fetch',
  'aria2c',
  'http',
  'https',
  'xh',
  'lwp-download',
  'lwp-request',
  'GET',
  'POST',
  'nc',
  'ncat',
  'netcat',
  'socat',
  'telnet',
  'tftp',
  'ftp',
  'sftp',
  'scp',
  'rsync',
  'ssh',
  'smbclient',
  'gh',
]);

/** Programs that send to the network what they read (files named in their arguments, or stdin). */
export const NETWORK_SENDERS: ReadonlySet<string> = new Set([
  'curl',
  'wget',
  'wget2',
  'http',
  'https',
  'xh',
  'nc',
  'ncat',
  'netcat',
  'socat',
  'telnet',
  'tftp',
  'ftp',
  'POST',
  'lwp-request',
]);

/** Programs that resolve or reach a host they are given: a host name can carry data out (DNS). */
export const HOST_LOOKUPS: ReadonlySet<string> = new Set([
  'dig',
  'nslookup',
  'host',
  'drill',
  'ping',
  'ping6',
  'traceroute',
  'getent',
  'whois',
]);

/** Programs that read their program from the command line: `bash -c`, `python -c`, `perl -e`, `eval`. */
export function isScriptInterpreter(program: string): boolean {
  return SCRIPT_INTERPRETER.test(program);
}

/** Options that hand a script interpreter its program on the command line instead of stdin. */
const PROGRAM_OPTIONS = new Set(['-c', '-e', '-E', '-m', '-r', '-p', '--eval', '--print', '--command']);

/**
 * `sh`, `bash -s`, `python3 -`, `node`: a shell or interpreter with neither a script file nor
 * `-c`/`-e` reads its program from stdin.
 */
export function readsProgramFromStdin(argv: readonly string[]): boolean {
  const program = programName(argv[0]);
  const shell = SHELLS.has(program);
  if (!shell && !SCRIPT_INTERPRETER.test(program)) return false;
  for (let i = 1; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === '-') return true;
    if (arg === '--') return argv[i + 1] === undefined || argv[i + 1] === '-';
    if (shell && /^[-+][A-Za-z]/.test(arg)) {
      if (arg.startsWith('-') && arg.includes('c')) return false;
      if (arg.startsWith('-') && arg.includes('s')) return true;
      if (/[oO]/.test(arg)) i++;
      continue;
    }
    if (!shell && PROGRAM_OPTIONS.has(arg.replace(/=.*$/, '').slice(0, arg.startsWith('--') ? undefined : 2)))
      return false;
    if (arg.startsWith('-')) continue;
    return false;
  }
  return true;
}

/** An interpreter's program text given on the command line: `python -c '…'`, `perl -e '…'`, `R -e '…'`. */
export function inlineCode(program: string, args: readonly string[]): string | undefined {
  if (!isScriptInterpreter(program)) return undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? '';
    if (/^-[A-Za-z]*[ceEr]$/.test(arg) || arg === '--eval' || arg === '--command') return args[i + 1];
    if (/^-[ceE]./.test(arg) && !arg.startsWith('--')) return arg.slice(2);
    if (arg.startsWith('--eval=')) return arg.slice(7);
  }
  return undefined;
}
