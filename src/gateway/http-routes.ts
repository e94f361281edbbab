/*
 * The gateway's plain HTTP side: /healthz (the process is up) and /readyz (it takes runs) for
 * anyone, answering nothing but yes or no; public routes (a scraper's /metrics on a private
 * network); the extra routes (the inspector page, /metrics) behind the same token and origin
 * check as a WebSocket upgrade; and a JSON 404 for the rest.
 */
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { GatewayLogger } from './logger.js';
import { checkRequest, type GuardOptions } from './request-guard.js';

export type HttpRouteHandler = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;

export interface HttpRoutesOptions {
  /** Extra GET routes by path; each requires the token. A path ending in "/*" also answers every path below it. */
  routes: Record<string, HttpRouteHandler>;
  /** Extra GET routes by path that anyone may call. */
  publicRoutes: Record<string, HttpRouteHandler>;
  /** Whether the server takes runs now (for /readyz), and short lines worth knowing (no ids or paths). Must not throw. */
  ready: () => Promise<{ ready: boolean; details?: string[] }>;
  guard: GuardOptions;
  logger: GatewayLogger;
}

export function httpRoutes(options: HttpRoutesOptions): RequestListener {
  const routes = new Map(Object.entries(options.routes));
  const publicRoutes = new Map(Object.entries(options.publicRoutes));

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = pathOf(req);
    if (path === '/healthz') {
      const ok = req.method === 'GET' || req.method === 'HEAD';
      sendJson(res, ok ? 200 : 405, { ok });
      return;
    }
    if (path === '/readyz') {
      if (req.method !== 'GET' && req.method !== 'HEAD') sendJson(res, 405, { ready: false });
      else {
        const { ready, details } = await options.ready();
        sendJson(res, ready ? 200 : 503, { ready, ...(details && details.length > 0 ? { details } : {}) });
      }
      return;
    }
    const open = publicRoutes.get(path);
    if (open) {
      await open(req, res);
      return;
    }
    const route = routes.get(path) ?? routeBelow(routes, path);
    if (!route) {
      sendJson(res, 404, {
        error: path === '/inspect' ? 'the inspector page is not available in this server' : `no route ${path}`,
      });
      return;
    }
    const verdict = checkRequest(req, options.guard);
    if (!verdict.ok) {
      res.setHeader('WWW-Authenticate', 'Bearer');
      sendJson(res, verdict.status, { error: verdict.reason });
      return;
    }
    await route(req, res);
  }

  return (req, res) => {
    void serve(req, res).catch((error: unknown) => {
      options.logger.error(`HTTP ${req.method} ${pathOf(req)} failed`, error);
      if (!res.headersSent) sendJson(res, 500, { error: 'internal error' });
      else res.destroy();
    });
  };
}

/** The "/x/*" route that answers a path below /x/, if any. */
function routeBelow(routes: Map<string, HttpRouteHandler>, path: string): HttpRouteHandler | undefined {
  for (const [pattern, route] of routes) {
    if (pattern.endsWith('/*') && path.startsWith(pattern.slice(0, -1)) && path.length > pattern.length - 1)
      return route;
  }
  return undefined;
}

function pathOf(req: IncomingMessage): string {
  try {
    return new URL(req.url ?? '/', 'http://gateway.invalid').pathname;
  } catch {
    return '/';
  }
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
  });
  res.end(text);
}
