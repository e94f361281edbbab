/*
 * GET /inspect: the inspector page and everything it loads, served by the gateway itself, so
 * it works without internet. The gateway checks the token before any of these handlers runs;
 * the page passes the same `?token=` on to its assets, its machine catalog and its WebSocket.
 */
import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { statechartCatalog } from '../../inspect/catalog.js';

export type InspectorRouteHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

const assetUrl = (file: string) => new URL(`./assets/${file}`, import.meta.url);

/** Read once, on first use: the assets never change while the gateway runs. */
function once<T>(load: () => Promise<T>): () => Promise<T> {
  let value: Promise<T> | undefined;
  return () => {
    if (!value) {
      value = load();
      // A failed load is tried again by the next request.
      value.catch(() => (value = undefined));
    }
    return value;
  };
}

const asset = (file: string) => once(() => readFile(assetUrl(file), 'utf8'));
const pageTemplate = asset('index.html');
const appJs = asset('app.js');
const appCss = asset('app.css');
const catalogJson = once(async () => JSON.stringify({ machines: await statechartCatalog() }));

function tokenOf(req: IncomingMessage): string {
  return new URL(req.url ?? '/', 'http://gateway.invalid').searchParams.get('token') ?? '';
}

function escapeHtml(text: string): string {
  return text.replace(/[<>&"']/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&#39;' })[c] ?? c);
}

function contentSecurityPolicy(req: IncomingMessage): string {
  const host = req.headers.host ?? '';
  return [
    "default-src 'none'",
    "script-src 'self'",
    // Inline SVGs carry their own <style>.
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    `connect-src 'self' ws://${host} wss://${host}`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

function send(res: ServerResponse, contentType: string, body: string, extra: Record<string, string> = {}): void {
  res.writeHead(200, {
    'Content-Type': `${contentType}; charset=utf-8`,
    'Content-Length': Buffer.byteLength(body),
    // The token is in the URL: never cache it, never send it on as a referrer.
    'Cache-Control': 'no-store',
    'Referrer-Policy': 'no-referrer',
    'X-Content-Type-Options': 'nosniff',
    ...extra,
  });
  res.end(body);
}

/** The `httpRoutes` of startGateway for the inspector page. */
export function inspectorRoutes(): Record<string, InspectorRouteHandler> {
  // Lay the statecharts out now (in a worker thread), so the first page load finds them ready.
  catalogJson().catch(() => {});
  return {
    '/inspect': async (req, res) => {
      const query = escapeHtml(`?token=${encodeURIComponent(tokenOf(req))}`);
      const html = (await pageTemplate()).replaceAll('{{query}}', query);
      send(res, 'text/html', html, { 'Content-Security-Policy': contentSecurityPolicy(req) });
    },
    '/inspect/app.js': async (_req, res) => send(res, 'text/javascript', await appJs()),
    '/inspect/app.css': async (_req, res) => send(res, 'text/css', await appCss()),
    '/inspect/machines.json': async (_req, res) => send(res, 'application/json', await catalogJson()),
  };
}
