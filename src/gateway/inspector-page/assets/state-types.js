// @ts-check
/*
 * The shapes of the page's state (store.js owns it): what the page knows of each live actor
 * and run, the address, the replay's scrubber, the runs list's pages and the shown session.
 */

/** @typedef {import('./wire-types.js').RunEvent} RunEvent */
/** @typedef {import('./wire-types.js').RunStatus} RunStatus */

/**
 * A live actor as the page knows it.
 * @typedef {{
 *   id: string,
 *   parentId?: string | undefined,
 *   machineId?: string | undefined,
 *   value?: unknown,
 *   status: string,
 *   context?: Record<string, unknown> | undefined,
 *   order: number,
 *   seenAt: number,
 *   placeholder?: boolean,
 * }} Actor
 */
/**
 * A run the page has heard of: its events so far (by seq) and where it stands.
 * @typedef {{
 *   runId: string,
 *   sessionId: string | undefined,
 *   events: Map<number, RunEvent>,
 *   order: number,
 *   startedOrder: number,
 *   terminal: boolean,
 *   historyLoaded: boolean,
 * }} KnownRun
 */
/** @typedef {{ view: 'live' } | { view: 'run', runId: string } | { view: 'session', sessionId: string }} Route */
/**
 * The replay of one run: where its scrubber stands (`following`: at the end, moving on with new events).
 * @typedef {{
 *   runId: string,
 *   index: number,
 *   following: boolean,
 *   playing: boolean,
 *   status: RunStatus | { error: string } | undefined,
 * }} ReplayState
 */
/** @typedef {'live' | 'history'} Tab */
/** @typedef {import('./wire-types.js').RunSummary} RunSummary */
/** @typedef {import('./wire-types.js').MethodParams<'runs.query'>} RunsQuery */
/**
 * The runs list: the pages of `runs.query` shown so far. `generation` tells an answer to an
 * older query (a filter since changed) from the current one.
 * @typedef {{
 *   runs: RunSummary[],
 *   cursor: string | undefined,
 *   loading: boolean,
 *   error: string | undefined,
 *   filters: Omit<RunsQuery, 'limit' | 'before'>,
 *   generation: number,
 * }} RunsListState
 */
/**
 * The session view: a page of the session's runs, their events, and when each steered message arrived.
 * @typedef {{
 *   sessionId: string,
 *   events: Map<string, RunEvent[]>,
 *   summaries: Map<string, RunSummary>,
 *   steerArrivals: Map<string, number>,
 *   cursor: string | undefined,
 *   loading: boolean,
 *   error: string | undefined,
 * }} SessionState
 */

export {};
