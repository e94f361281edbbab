// @ts-check
/*
 * The wire types the page reads, taken from the gateway's own TypeScript (docs/protocol.md):
 * the page is checked against what the gateway sends, not against a copy of it.
 */

/** @typedef {import('../../../core/run-events.js').RunEvent} RunEvent */
/** @typedef {import('../../../core/run-events.js').StreamEvent} StreamEvent */
/** @typedef {import('../../../core/run-events.js').ToolScheduleData} ToolScheduleData */
/**
 * @template {import('../../../core/run-events.js').RunEventType} K
 * @typedef {import('../../../core/run-events.js').RunEventOf<K>} RunEventOf
 */
/** @typedef {import('../../../core/engine-snapshot.js').EngineSnapshot} EngineSnapshot */
/** @typedef {import('../../../core/run-status.js').RunStatus} RunStatus */
/** @typedef {import('../../../store/types.js').RunSummary} RunSummary */
/** @typedef {import('../../../store/types.js').RunPage} RunPage */
/** @typedef {import('../../../diagrams/catalog.js').StatechartEntry} StatechartEntry */
/** @typedef {import('../../inspection/inspect-serialize.js').SerializedInspectionEvent} InspectionEvent */
/** @typedef {import('../../inspection/inspect-serialize.js').SerializedSnapshot} InspectionSnapshot */
/** @typedef {import('../../methods.js').MethodName} MethodName */
/**
 * @template {MethodName} M
 * @typedef {import('../../methods.js').MethodParams<M>} MethodParams
 */
/** @typedef {import('../../methods.js').MethodResults} MethodResults */
/** @typedef {import('../../methods.js').Notifications} Notifications */
/** @typedef {import('../../protocol.js').RpcErrorBody} RpcErrorBody */

/**
 * How the page asks the gateway: one typed JSON-RPC call.
 * @typedef {<M extends MethodName>(method: M, params: MethodParams<M>) => Promise<MethodResults[M]>} Call
 */

/** The page's addresses (no token in them: the tab keeps it). */
/** @typedef {{ live(): string, run(runId: string): string, session(sessionId: string): string }} Links */

export {};
