/*
 * What each gateway method does, against the engine. Params arrive already validated by the
 * method's zod schema (methods.ts); errors thrown here become JSON-RPC errors (rpcErrorOf).
 */
import type { z } from 'zod';
import type { ApprovalNotice } from '../approval/index.js';
import type { PartialConfig } from '../config/index.js';
import type { Engine } from '../engine/index.js';
import { EngineError, isEngineError } from '../core/errors.js';
import type { EventStreamFilter } from '../engine/index.js';
import type { NodeRegistry } from './nodes/node-registry.js';
import type { MethodName, MethodParamsSchemas, MethodResults } from './methods.js';
import { RpcError, RpcErrorCode, type RpcErrorBody } from './protocol.js';
import { isStoreError, type StoreError } from '../store/store-error.js';

/**
 * The engine as the gateway uses it: an Engine, or a cluster node in front of one (src/cluster/),
 * whose reconfigure, snapshot and respondApproval ask the other processes too and so answer later.
 */
export type GatewayEngine = Pick<
  Engine,
  | 'submit'
  | 'wait'
  | 'events'
  | 'history'
  | 'cancel'
  | 'stopSession'
  | 'status'
  | 'getRun'
  | 'inspect'
  | 'queryRuns'
  | 'inspectionSnapshot'
> & {
  lane(sessionId: string): ReturnType<Engine['lane']> | Promise<ReturnType<Engine['lane']>>;
  withdraw(runId: string): ReturnType<Engine['withdraw']>;
  moveInLane(runId: string, position: number): ReturnType<Engine['moveInLane']>;
  promoteToSteer(runId: string): ReturnType<Engine['promoteToSteer']>;
  editWaiting(runId: string, patch: { input: string }): ReturnType<Engine['editWaiting']>;
  reconfigure(partial: PartialConfig): ReturnType<Engine['reconfigure']> | Promise<ReturnType<Engine['reconfigure']>>;
  snapshot(): ReturnType<Engine['snapshot']> | Promise<ReturnType<Engine['snapshot']>>;
  respondApproval(...args: Parameters<Engine['respondApproval']>): boolean | Promise<boolean>;
  /** Calls `listener` for each call that starts waiting for approval; returns the unsubscribe function. */
  onApprovalRequested(listener: (request: ApprovalNotice) => void): () => void;
};

/** What a method may do on the connection it was called on. */
export interface CallScope {
  engine: GatewayEngine;
  /** False once the gateway stops admitting (graceful shutdown): submits are refused. */
  admitting(): boolean;
  /** The connected node clients, when the gateway has a registry. */
  nodes?: Pick<NodeRegistry, 'list'>;
  /** Opens a subscription whose notifications start right after this call's reply. */
  subscribeEvents(filter: EventStreamFilter): string;
  subscribeInspect(): string;
  unsubscribe(subscriptionId: string): void;
}

type Handler<M extends MethodName> = (
  params: z.output<(typeof MethodParamsSchemas)[M]>,
  scope: CallScope,
) => MethodResults[M] | Promise<MethodResults[M]>;

export const methodHandlers: { [M in MethodName]: Handler<M> } = {
  'run.submit': (request, { engine, admitting }) => {
    if (!admitting()) {
      throw new EngineError(
        'closed',
        'the server is shutting down and admits no new runs; submit again once it is back',
      );
    }
    return engine.submit(request);
  },
  'run.wait': ({ runId }, { engine }) => namingRun(runId, engine.wait(runId)),
  'run.get': async ({ runId }, { engine }) => {
    const status = await namingRun(runId, engine.getRun(runId));
    if (!status) throw new EngineError('not_found', `no run "${runId}" is stored`, { runId });
    return status;
  },
  'run.history': ({ runId }, { engine }) => namingRun(runId, engine.history(runId)),
  'runs.query': (query, { engine }) => engine.queryRuns(query),
  'run.cancel': async ({ runId, reason }, { engine }) => ({ cancelled: await engine.cancel(runId, reason) }),
  'session.stop': ({ sessionId }, { engine }) => engine.stopSession(sessionId),
  'lane.list': ({ sessionId }, { engine }) => engine.lane(sessionId),
  'lane.withdraw': ({ runId }, { engine }) => engine.withdraw(runId),
  'lane.move': ({ runId, position }, { engine }) => engine.moveInLane(runId, position),
  'lane.promote': ({ runId }, { engine }) => engine.promoteToSteer(runId),
  'lane.edit': ({ runId, input }, { engine }) => engine.editWaiting(runId, { input }),
  'events.subscribe': (filter, scope) => ({ subscriptionId: scope.subscribeEvents(filter) }),
  'events.unsubscribe': ({ subscriptionId }, scope) => {
    scope.unsubscribe(subscriptionId);
    return { ok: true };
  },
  'approval.respond': async ({ approvalId, decision }, { engine }) => ({
    ok: await engine.respondApproval(approvalId, decision),
  }),
  'engine.snapshot': (_params, { engine }) => engine.snapshot(),
  'config.update': (partial, { engine }) => engine.reconfigure(partial as PartialConfig),
  'inspect.subscribe': (_params, scope) => ({ subscriptionId: scope.subscribeInspect() }),
  'nodes.list': (_params, { nodes }) => ({ nodes: nodes?.list() ?? [] }),
};

/** A damaged file met while answering about a run is that run's `corrupt_file`. */
async function namingRun<T>(runId: string, answer: Promise<T>): Promise<T> {
  try {
    return await answer;
  } catch (error) {
    if (isStoreError(error) && error.code === 'corrupt_file') {
      throw new EngineError('corrupt_file', `run "${runId}": ${error.message}`, { runId, ...storeErrorDetails(error) });
    }
    throw error;
  }
}

/** The ids a store error names (its message already says which file). */
function storeErrorDetails(error: StoreError): Record<string, string> {
  const { path: _path, cause: _cause, ...ids } = error.details ?? {};
  return Object.fromEntries(
    Object.entries(ids).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
  );
}

/** Bad input stays an invalid-params answer even when the engine is the one that found it. */
const INVALID_PARAMS_CODES: ReadonlySet<string> = new Set(['invalid_request', 'invalid_config']);

export function rpcErrorOf(error: unknown): { body: RpcErrorBody; unexpected: boolean } {
  if (error instanceof RpcError) return { body: error.toBody(), unexpected: false };
  if (isEngineError(error)) {
    const issues = (error.details as { issues?: unknown } | undefined)?.issues;
    const code = INVALID_PARAMS_CODES.has(error.code) ? RpcErrorCode.InvalidParams : RpcErrorCode.EngineError;
    return {
      body: {
        code,
        message: error.message,
        data: {
          code: error.code,
          ...(error.details !== undefined ? { details: error.details } : {}),
          ...(issues !== undefined ? { issues } : {}),
        },
      },
      unexpected: false,
    };
  }
  if (isStoreError(error)) {
    // A store error a method did not name: damaged data is `corrupt_file`, any other failure `store_failed`.
    const code = error.code === 'corrupt_file' ? 'corrupt_file' : 'store_failed';
    const details = storeErrorDetails(error);
    return {
      body: {
        code: RpcErrorCode.EngineError,
        message: error.message,
        data: { code, ...(Object.keys(details).length > 0 ? { details } : {}) },
      },
      unexpected: false,
    };
  }
  return {
    body: { code: RpcErrorCode.InternalError, message: 'internal error; the server log has the details' },
    unexpected: true,
  };
}
