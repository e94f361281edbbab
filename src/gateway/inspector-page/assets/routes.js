// @ts-check
/*
 * The page's addresses: /inspect (live), /inspect/run/<runId> (a replay),
 * /inspect/session/<sessionId> (a session's story). No token in them: the tab keeps it.
 */

/** @typedef {import('./store.js').Route} Route */

/** @type {import('./wire-types.js').Links} */
export const links = {
  live: () => '/inspect',
  run: (runId) => `/inspect/run/${encodeURIComponent(runId)}`,
  session: (sessionId) => `/inspect/session/${encodeURIComponent(sessionId)}`,
};

/**
 * @param {string} pathname
 * @returns {Route}
 */
export function routeOf(pathname) {
  const match = /^\/inspect\/(run|session)\/([^/]+)\/?$/.exec(pathname);
  if (!match || !match[2]) return { view: 'live' };
  const id = decodeURIComponent(match[2]);
  return match[1] === 'run' ? { view: 'run', runId: id } : { view: 'session', sessionId: id };
}
