/*
 * Which programs run code they are handed (shells, script interpreters, `eval`, `source`) and
 * which fetch from the network, for the download-into-a-shell rule and for reading
 * `echo '…' | sh` and here-documents fed to a shell as shell text.
 */
import { SHELLS, programName } from './wrappers.js';

const SCRIPT_INTERPRETER = /^(?:python[0-9.]*|pypy[0-9.]*|perl[0-9.]*|ruby[0-9.]*|node|nodejs|bun|deno|php[0-9.]*|lua[0-9.]*|Rscript|osascript|pwsh|powershell)$/;

/** Programs that run source text they are given: shells, script interpreters, `eval`, `source`, `.`. */
export function runsCode(program: string): boolean {
  return SHELLS.has(program) || SCRIPT_INTERPRETER.test(program) || program === 'eval' || program === 'source' || program === '.';
}

export const DOWNLOADERS: ReadonlySet<string> = new Set(['curl', 'wget', 'wget2', 'fetch', 'aria2c', 'http', 'https', 'xh', 'lwp-download', 'lwp-request', 'GET']);

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
    if (!shell && PROGRAM_OPTIONS.has(arg.replace(/=.*$/, '').slice(0, arg.startsWith('--') ? undefined : 2))) return false;
    if (arg.startsWith('-')) continue;
    return false;
  }
  return true;
}
