/*
 * How a client connection's frames become method calls and answers, as JSON-RPC 2.0 says:
 * a request (with an id) is answered exactly once; a notification (no id) runs and is never
 * answered, not even with an error, and an unknown method in one is ignored; a batch (an
 * array) runs its requests and is answered with one array that holds no answer for its
 * notifications, and with nothing at all when it holds only notifications.
 *
 * Order: every handler starts in the order its request arrived (in a frame, in a batch),
 * whatever an earlier one awaits. For a request alone in its frame, an answer decided without
 * a handler (invalid request, unknown method, invalid params) is sent as soon as the frame is
 * read. What a handler asks to start after its answer (a subscription's notifications)
 * starts once that answer is sent: for a batch, once the batch's array is.
 */
import type { GatewayLogger } from './logger.js';
import { methodHandlers, rpcErrorOf, type CallScope } from './method-handlers.js';
import { isMethodName, MethodParamsSchemas, type MethodName } from './methods.js';
import {
  errorAnswer,
  errorFrame,
  idOf,
  issuesOf,
  readShape,
  RequestFrameSchema,
  resultFrame,
  RpcErrorCode,
  type FrameShape,
  type RequestFrame,
  type RequestId,
} from './protocol.js';

export interface DispatcherOptions {
  /** Names the connection in log lines ("connection 3"). */
  label: string;
  logger: GatewayLogger;
  /** Requests (notifications included) one batch may hold; a longer batch runs none of them. */
  maxBatchRequests: number;
  /** Sends one frame to the client. Must not throw. */
  send(frame: string): void;
  /**
   * The scope one handler runs in. `answerWaits` is true inside a batch, whose answer goes
   * out only when its slowest request is done: later than the handler returns.
   */
  scope(afterReply: (() => void)[], answerWaits: boolean): CallScope;
}

/** What one request came to: its answer (none for a notification), and what starts after it. */
interface Outcome {
  answer: string | undefined;
  afterReply: (() => void)[];
}

const KNOWN_METHODS = Object.keys(MethodParamsSchemas).join(', ');

const REQUEST_SHAPE: FrameShape<RequestFrame> = {
  schema: RequestFrameSchema,
  refuse: (raw, issues) =>
    errorAnswer(
      idOf(raw),
      RpcErrorCode.InvalidRequest,
      'invalid request: expected {"jsonrpc":"2.0","id"?:<string|number>,"method":<string>,"params"?:<object>}',
      {
        issues,
      },
    ),
};

export class RequestDispatcher {
  constructor(private readonly options: DispatcherOptions) {}

  /** One frame from the client, already read as JSON: a request, a notification or a batch. */
  dispatch(raw: unknown): void {
    if (!Array.isArray(raw)) {
      this.request(raw, false, (outcome) => this.reply(outcome.answer, [outcome]));
      return;
    }
    if (raw.length === 0) {
      this.options.send(
        errorAnswer(
          null,
          RpcErrorCode.InvalidRequest,
          'invalid request: an empty batch; a batch holds at least one request',
        ),
      );
      return;
    }
    if (raw.length > this.options.maxBatchRequests) {
      this.refuseBatch(raw);
      return;
    }
    const outcomes = new Array<Outcome>(raw.length);
    let waiting = raw.length;
    raw.forEach((element: unknown, index) =>
      this.request(element, true, (outcome) => {
        outcomes[index] = outcome;
        waiting -= 1;
        if (waiting > 0) return;
        const answers = outcomes.flatMap((o) => (o.answer === undefined ? [] : [o.answer]));
        this.reply(answers.length > 0 ? `[${answers.join(',')}]` : undefined, outcomes);
      }),
    );
  }

  private reply(answer: string | undefined, outcomes: Outcome[]): void {
    if (answer !== undefined) this.options.send(answer);
    for (const outcome of outcomes) for (const start of outcome.afterReply) start();
  }

  /** Checks one request and starts its handler; `done` is called once, maybe synchronously. */
  private request(raw: unknown, inBatch: boolean, done: (outcome: Outcome) => void): void {
    const shaped = readShape(REQUEST_SHAPE, raw);
    if (!shaped.ok) return done(answered(shaped.answer));
    const { id, method } = shaped.frame;
    if (!isMethodName(method)) {
      if (id === undefined) return done(this.ignored(method, 'no such method'));
      return done(
        answered(
          errorAnswer(
            id,
            RpcErrorCode.MethodNotFound,
            `unknown method "${method.slice(0, 100)}"; known: ${KNOWN_METHODS}`,
          ),
        ),
      );
    }
    const params = MethodParamsSchemas[method].safeParse(shaped.frame.params ?? {}, { reportInput: true });
    if (!params.success) {
      if (id === undefined) return done(this.ignored(method, 'invalid params'));
      return done(
        answered(
          errorAnswer(id, RpcErrorCode.InvalidParams, `invalid params for ${method}`, {
            ...(method === 'run.submit' ? { code: 'invalid_request' } : {}),
            issues: issuesOf(params.error),
          }),
        ),
      );
    }
    void this.call(method, params.data, id, inBatch, done);
  }

  private async call(
    method: MethodName,
    params: unknown,
    id: RequestId | undefined,
    inBatch: boolean,
    done: (outcome: Outcome) => void,
  ): Promise<void> {
    const afterReply: (() => void)[] = [];
    // The table is keyed by method, and the params were parsed by that method's own schema.
    const handler = methodHandlers[method] as (params: unknown, scope: CallScope) => unknown;
    let outcome: Outcome;
    try {
      const result = await handler(params, this.options.scope(afterReply, inBatch));
      outcome = { answer: id === undefined ? undefined : resultFrame(id, result), afterReply };
    } catch (error) {
      const { body, unexpected } = rpcErrorOf(error);
      if (unexpected) this.options.logger.error(`${this.options.label}: ${method} failed`, error);
      else if (id === undefined)
        this.options.logger.info(`${this.options.label}: notification ${method} failed: ${body.message}`);
      outcome = answered(id === undefined ? undefined : errorFrame(id, body));
    }
    done(outcome);
  }

  private ignored(method: string, why: string): Outcome {
    this.options.logger.info(
      `${this.options.label}: ignored a notification of ${JSON.stringify(method.slice(0, 100))}: ${why}`,
    );
    return answered(undefined);
  }

  /**
   * A batch longer than allowed runs none of its requests; each is answered (with its id, so
   * a client's waiting calls end) and its notifications are not.
   */
  private refuseBatch(batch: unknown[]): void {
    const max = this.options.maxBatchRequests;
    const message = `a batch may hold at most ${max} requests and this one holds ${batch.length}; send them in smaller batches`;
    const answers = batch.flatMap((element) => {
      const shaped = readShape(REQUEST_SHAPE, element);
      if (shaped.ok && shaped.frame.id === undefined) return [];
      return [errorAnswer(idOf(element), RpcErrorCode.InvalidRequest, message, { code: 'batch_too_large', max })];
    });
    if (answers.length > 0) this.options.send(`[${answers.join(',')}]`);
  }
}

function answered(answer: string | undefined): Outcome {
  return { answer, afterReply: [] };
}
