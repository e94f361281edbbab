/*
 * The gateway's bearer token: generated at first start into `<dataDir>/token` (mode 0600),
 * reused on every later start, and compared in constant time.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmod, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface GatewayToken {
  token: string;
  path: string;
  /** True when this call generated the token (print it once, then only the path). */
  created: boolean;
}

/** Shorter file contents are treated as damaged and replaced with a fresh token. */
const MIN_TOKEN_CHARS = 16;

export async function ensureToken(dataDir: string): Promise<GatewayToken> {
  // 0700 like the store's directories: the token is the key to every session.
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const path = join(dataDir, 'token');
  const existing = await readToken(path);
  if (existing !== undefined) {
    const { mode } = await stat(path);
    if ((mode & 0o777) !== 0o600) await chmod(path, 0o600);
    return { token: existing, path, created: false };
  }
  const token = generateToken();
  try {
    // 'wx': two servers starting on one data dir agree on whichever token was written first.
    await writeFile(path, `${token}\n`, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    const winner = await readToken(path);
    if (winner !== undefined) return { token: winner, path, created: false };
    await writeFile(path, `${token}\n`, { mode: 0o600 });
  }
  // The mode of writeFile is masked by the umask; make sure it is exactly 0600.
  await chmod(path, 0o600);
  return { token, path, created: true };
}

/**
 * 32 random bytes as base64url, never starting with `-`: a token is pasted after a flag
 * (`--token "$(cat token)"`), where a leading `-` reads as another option.
 */
export function generateToken(random: (size: number) => Buffer = randomBytes): string {
  for (;;) {
    const token = random(32).toString('base64url');
    if (!token.startsWith('-')) return token;
  }
}

/** The token in a token file, or undefined when the file is missing or holds no usable token. */
export async function readToken(path: string): Promise<string | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  const token = text.trim();
  return token.length >= MIN_TOKEN_CHARS ? token : undefined;
}

/** Constant-time comparison (hashing first makes unequal lengths take the same time too). */
export function tokensEqual(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}
