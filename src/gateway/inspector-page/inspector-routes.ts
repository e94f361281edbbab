/*
 * GET /inspect: the inspector page and everything it loads, served by the gateway itself, so
 * it works without internet. The page also answers /inspect/run/<runId> (a run's replay) and
 * /inspect/session/<sessionId> (a session's story): it reads which from its own address. The
 * gateway checks the token before any of these handlers runs. The page never carries the token
 * in its HTML (a saved page, a proxy log or a screenshot would): it sets an HttpOnly,
 * SameSite=Strict cookie limited to /inspect for its assets and reloads, and its script takes
 * the token from the address, keeps it for the tab and strips it from the address bar.
 */
import { readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { statechartCatalog } from '../../diagrams/catalog.js';
import { INSPECTOR_COOKIE, tokenOf } from '../request-guard.js';

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
/**
 * The page's modules (app.js imports the others, the vendored lit-html among them): every
 * JavaScript file under assets/, by its path there. Type declarations are for the checker only.
 */
function scriptFiles(): string[] {
  return readdirSync(fileURLToPath(assetUrl('')), { recursive: true, encoding: 'utf8' })
    .map((file) => file.split(sep).join('/'))
    .filter((file) => file.endsWith('.js'))
    .sort();
}
const STYLES = ['app.css', 'history.css'];
const catalogJson = once(async () => JSON.stringify({ machines: await statechartCatalog() }));

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
  const page: InspectorRouteHandler = async (req, res) => {
    const cookie = `${INSPECTOR_COOKIE}=${encodeURIComponent(tokenOf(req) ?? '')}; Path=/inspect; HttpOnly; SameSite=Strict`;
    send(res, 'text/html', await pageTemplate(), {
      'Content-Security-Policy': contentSecurityPolicy(req),
      'Set-Cookie': cookie,
    });
  };
  const assets = (files: string[], contentType: string) =>
    files.map((file): [string, InspectorRouteHandler] => {
      const text = asset(file);
      return [`/inspect/${file}`, async (_req, res) => send(res, contentType, await text())];
    });
  return {
    '/inspect': page,
    '/inspect/run/*': page,
    '/inspect/session/*': page,
    ...Object.fromEntries(assets(scriptFiles(), 'text/javascript')),
    ...Object.fromEntries(assets(STYLES, 'text/css')),
    '/inspect/machines.json': async (_req, res) => send(res, 'application/json', await catalogJson()),
  };
}
