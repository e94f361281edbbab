/*
 * Which gateway a client command talks to, and with which token: --token, else
 * --token-file, else $SWITCHYARD_TOKEN, else the token file of the data directory
 * (<--data-dir or .switchyard>/token, where `switchyard serve` keeps it). --token is accepted
 * with a warning: a command line is readable by every user of the machine (ps, /proc).
 */
import { join } from 'node:path';
import { readToken } from '../gateway/auth-token.js';
import { UsageError } from './cli-args.js';

export interface GatewayTargetFlags {
  gateway?: string | undefined;
  token?: string | undefined;
  'token-file'?: string | undefined;
  'data-dir'?: string | undefined;
}

export interface GatewayTarget {
  url: string;
  token: string;
}

export const DEFAULT_GATEWAY_URL = 'ws://127.0.0.1:7420';

export const TOKEN_IN_PS_WARNING =
  'warning: --token puts the token in the process list, where every user of this machine can read it (ps); use --token-file FILE or $SWITCHYARD_TOKEN';

/** `warn` gets a line for the user (stderr) when the token came from the command line. */
export async function gatewayTarget(
  flags: GatewayTargetFlags,
  url: string,
  warn: (line: string) => void,
): Promise<GatewayTarget> {
  if (!/^wss?:\/\//.test(url)) throw new UsageError(`--gateway must be a ws:// or wss:// URL, not "${url}"`);
  if (flags.token !== undefined) {
    warn(TOKEN_IN_PS_WARNING);
    return { url, token: flags.token };
  }
  if (flags['token-file'] !== undefined) {
    const token = await readToken(flags['token-file']);
    if (token === undefined) throw new UsageError(`no token in ${flags['token-file']}`);
    return { url, token };
  }
  const fromEnv = process.env['SWITCHYARD_TOKEN'];
  if (fromEnv) return { url, token: fromEnv };
  const path = join(flags['data-dir'] ?? '.switchyard', 'token');
  const token = await readToken(path);
  if (token === undefined) {
    throw new UsageError(`no token: pass --token-file <data-dir>/token (or set SWITCHYARD_TOKEN); ${path} has none`);
  }
  return { url, token };
}
