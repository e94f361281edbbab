/*
 * Who may talk to the gateway: the bearer token (header or `?token=`) and, for browsers,
 * the Origin. Checked before a WebSocket upgrade (answering 401/403 on the raw socket) and
 * before every protected HTTP route.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { tokensEqual } from './auth-token.js';

export type GuardVerdict = { ok: true } | { ok: false; status: 401 | 403; reason: string };

export interface GuardOptions {
  token: string;
  /** Origins a browser may connect from besides the gateway's own. */
  allowedOrigins: readonly string[];
  /** The gateway's own origins (http://host:port, and the loopback spellings of it). */
  ownOrigins: readonly string[];
}

export function tokenOf(req: IncomingMessage): string | undefined {
  const header = req.headers.authorization;
  if (header !== undefined) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    return match?.[1];
  }
  const url = new URL(req.url ?? '/', 'http://gateway.invalid');
  return url.searchParams.get('token') ?? (url.pathname.startsWith('/inspect') ? inspectorCookieOf(req) : undefined);
}

/** The cookie the inspector page sets so that its assets and reloads need no token in a URL (Path=/inspect only). */
export const INSPECTOR_COOKIE = 'switchyard_inspector';

function inspectorCookieOf(req: IncomingMessage): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [name, ...value] = part.trim().split('=');
    if (name === INSPECTOR_COOKIE) return decodeURIComponent(value.join('='));
  }
  return undefined;
}

/** The origin check comes first: a page from a foreign origin learns nothing about the token. */
export function checkRequest(req: IncomingMessage, options: GuardOptions): GuardVerdict {
  const origin = req.headers.origin;
  if (origin !== undefined && !options.ownOrigins.includes(origin) && !options.allowedOrigins.includes(origin)) {
    return { ok: false, status: 403, reason: `origin ${origin} is not allowed; add it to allowedOrigins` };
  }
  const token = tokenOf(req);
  if (token === undefined) {
    return { ok: false, status: 401, reason: 'missing token: send "Authorization: Bearer <token>" or ?token=<token>' };
  }
  if (!tokensEqual(token, options.token)) return { ok: false, status: 401, reason: 'wrong token' };
  return { ok: true };
}

/** The origins a browser shows for this gateway: the bound host, and for loopback its aliases. */
export function ownOriginsOf(host: string, port: number): string[] {
  const loopback = ['127.0.0.1', 'localhost', '::1'];
  const hosts = loopback.includes(host) ? loopback : [host];
  return hosts.map((h) => `http://${h.includes(':') ? `[${h}]` : h}:${port}`);
}

const STATUS_TEXT = { 401: 'Unauthorized', 403: 'Forbidden', 503: 'Service Unavailable' } as const;

/** Answers an upgrade request with a plain HTTP error and closes the socket (no WebSocket). */
export function rejectUpgrade(socket: Duplex, status: keyof typeof STATUS_TEXT, reason: string): void {
  const body = `${reason}\n`;
  const head = [
    `HTTP/1.1 ${status} ${STATUS_TEXT[status]}`,
    'Connection: close',
    'Content-Type: text/plain; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    ...(status === 401 ? ['WWW-Authenticate: Bearer'] : []),
  ];
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  socket.once('finish', () => socket.destroy());
  socket.end(`${head.join('\r\n')}\r\n\r\n${body}`);
}
