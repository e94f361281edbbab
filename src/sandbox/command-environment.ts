/*
 * The environment of a command: an allow-list of the server's variables (locale, time zone,
 * terminal, PATH) and nothing else, sandboxed or not, so API keys and tokens in the server's
 * environment never reach a command.
 */

const PASSED_THROUGH = [
  'PATH',
  'LANG',
  'LANGUAGE',
  'LC_ALL',
  'LC_CTYPE',
  'LC_COLLATE',
  'LC_MESSAGES',
  'LC_NUMERIC',
  'LC_TIME',
  'TZ',
  'TERM',
] as const;
const FALLBACK_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export interface CommandEnvironmentOptions {
  home: string;
  /** Added last, so they win; for a caller's own variables. */
  extra?: Record<string, string>;
  /** Where the allow-listed variables are read (default process.env). */
  source?: NodeJS.ProcessEnv;
}

export function commandEnvironment({
  home,
  extra = {},
  source = process.env,
}: CommandEnvironmentOptions): Record<string, string> {
  const env: Record<string, string> = { PATH: FALLBACK_PATH, LANG: 'C.UTF-8' };
  for (const name of PASSED_THROUGH) {
    const value = source[name];
    if (value !== undefined && value !== '') env[name] = value;
  }
  return { ...env, HOME: home, ...extra };
}
