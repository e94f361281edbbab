/*
 * The gateway's side of one connected node: sends it node.invoke requests, matches its
 * answers to the calls waiting for them, turns an abort into node.cancel, and fails whatever
 * is still in flight when the connection goes, however it goes.
 */
import { randomUUID } from 'node:crypto';
import type { WebSocket } from 'ws';
import { MAX_TIMER_MS } from '../../core/clock.js';
import { ToolError } from '../../core/errors.js';
import { BoundedSender } from '../bounded-sender.js';
import { GatewayCloseCode } from '../close-codes.js';
import type { GatewayLogger } from '../logger.js';
import { PeerSocket } from '../peer-socket.js';
import { errorAnswer, issuesOf, notificationFrame, readShape, RpcErrorCode, type FrameShape } from '../protocol.js';
import {
  NodeAnswerFrameSchema,
  NodeInvokeResultSchema,
  type NodeAnswerFrame,
  type NodeCommand,
  type NodeInvokeResult,
} from './node-protocol.js';

export interface NodeConnectionOptions {
  name: string;
  remoteAddress?: string;
  logger: GatewayLogger;
  sendBufferLimitBytes: number;
  closeTimeoutMs: number;
  /** Told to the node, so it cuts an answer that would not fit. */
  maxPayloadBytes: number;
  /**
   * How long past its own timeout an invocation may go unanswered before it fails with
   * `timeout` (the node is alive but does not answer). Default 10 s.
   */
  answerGraceMs?: number;
}

interface InFlight {
  invocationId: string;
  command: string;
  resolve(result: NodeInvokeResult): void;
  reject(error: ToolError): void;
}

const DEFAULT_ANSWER_GRACE_MS = 10_000;

const ANSWER_SHAPE: FrameShape<NodeAnswerFrame> = {
  schema: NodeAnswerFrameSchema,
  refuse: (_raw, issues) =>
    errorAnswer(
      null,
      RpcErrorCode.InvalidRequest,
      'a node connection only answers node.invoke requests: {"jsonrpc":"2.0","id":<id>,"result"|"error":...}',
      { issues },
    ),
};

export class NodeConnection {
  private readonly sender: BoundedSender;
  private readonly socket: PeerSocket;
  private readonly inFlight = new Map<number, InFlight>();
  private nextId = 1;
  readonly connectedAt = new Date().toISOString();
  /** Resolves when the socket has closed and every invocation in flight has been failed. */
  readonly closed: Promise<void>;

  constructor(
    ws: WebSocket,
    private readonly options: NodeConnectionOptions,
  ) {
    this.sender = new BoundedSender(ws, {
      limitBytes: options.sendBufferLimitBytes,
      onOverflow: (pending) => {
        options.logger.warn(`node "${options.name}": ${pending} bytes unread; closing it as a slow consumer`);
        this.close(GatewayCloseCode.SlowConsumer, 'slow consumer');
      },
    });
    this.socket = new PeerSocket(ws, {
      sender: this.sender,
      closeTimeoutMs: options.closeTimeoutMs,
      binaryMessage: 'binary frames are not supported; answer node.invoke with JSON text frames',
      onFrame: (raw) => this.onFrame(raw),
      onClosed: (code, reason) =>
        this.failInFlight(`the connection closed (${code}${reason.length > 0 ? ` ${reason}` : ''})`),
      onError: (error) => options.logger.info(`node "${options.name}": ${error.message}`),
    });
    this.closed = this.socket.closed.then(() => {});
    this.sender.send(
      notificationFrame(
        'node.registered',
        JSON.stringify({ name: options.name, maxPayloadBytes: options.maxPayloadBytes }),
      ),
    );
  }

  get name(): string {
    return this.options.name;
  }

  get remoteAddress(): string | undefined {
    return this.options.remoteAddress;
  }

  get open(): boolean {
    return this.socket.open;
  }

  /** Invocations sent and not answered yet. */
  get inFlightCount(): number {
    return this.inFlight.size;
  }

  invoke(command: NodeCommand, signal?: AbortSignal): Promise<NodeInvokeResult> {
    const name = this.options.name;
    if (signal?.aborted)
      return Promise.reject(new ToolError('cancelled', `the call was cancelled before it was sent to node "${name}"`));
    if (!this.open) return Promise.reject(unavailable(name, 'it is disconnecting'));
    const id = this.nextId++;
    const invocationId = randomUUID();
    return new Promise<NodeInvokeResult>((resolve, reject) => {
      const graceMs = this.options.answerGraceMs ?? DEFAULT_ANSWER_GRACE_MS;
      const done = () => {
        this.inFlight.delete(id);
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      const giveUp = (error: ToolError) => {
        if (!this.inFlight.has(id)) return;
        done();
        // The node may still be running it: tell it to stop, whatever it answers later is dropped.
        this.sender.send(notificationFrame('node.cancel', JSON.stringify({ invocationId })));
        reject(error);
      };
      const onAbort = () =>
        giveUp(new ToolError('cancelled', `the call was cancelled; node "${name}" was told to stop the command`));
      const answerWithinMs = Math.min(command.timeoutMs + graceMs, MAX_TIMER_MS);
      const timer = setTimeout(
        () =>
          giveUp(
            new ToolError(
              'timeout',
              `node "${name}" did not answer within ${answerWithinMs} ms; it was told to stop the command`,
            ),
          ),
        answerWithinMs,
      );
      timer.unref();
      this.inFlight.set(id, {
        invocationId,
        command: command.command,
        resolve: (result) => {
          done();
          resolve(result);
        },
        reject: (error) => {
          done();
          reject(error);
        },
      });
      signal?.addEventListener('abort', onAbort, { once: true });
      const params = { invocationId, ...command };
      if (!this.sender.send(`{"jsonrpc":"2.0","id":${id},"method":"node.invoke","params":${JSON.stringify(params)}}`)) {
        this.inFlight.get(id)?.reject(unavailable(name, 'the request could not be sent'));
      }
    });
  }

  ping(): boolean {
    return this.socket.ping();
  }

  close(code: number, reason: string): void {
    this.socket.close(code, reason);
  }

  terminate(): void {
    this.socket.terminate();
  }

  private onFrame(raw: unknown): void {
    const shaped = readShape(ANSWER_SHAPE, raw);
    if (!shaped.ok) {
      if (shaped.answer !== undefined) this.sender.send(shaped.answer);
      return;
    }
    const answer = shaped.frame;
    if (answer.id === null) {
      this.options.logger.warn(
        `node "${this.name}" reports a protocol error: ${'error' in answer ? answer.error.message : '?'}`,
      );
      return;
    }
    // An answer to an invocation that was cancelled or timed out meanwhile is dropped.
    const call = typeof answer.id === 'number' ? this.inFlight.get(answer.id) : undefined;
    if (!call) return;
    if ('error' in answer) {
      const code = (answer.error.data as { code?: unknown } | undefined)?.code;
      call.reject(
        new ToolError(typeof code === 'string' ? code : 'node_error', `node "${this.name}": ${answer.error.message}`),
      );
      return;
    }
    const result = NodeInvokeResultSchema.safeParse(answer.result, { reportInput: true });
    if (!result.success) {
      const detail = issuesOf(result.error)
        .map((i) => `${i.path || '(result)'}: ${i.message}`)
        .join('; ');
      call.reject(
        new ToolError('node_protocol_error', `node "${this.name}" answered with an invalid result (${detail})`),
      );
      return;
    }
    call.resolve(result.data);
  }

  private failInFlight(why: string): void {
    for (const call of [...this.inFlight.values()]) {
      call.reject(
        unavailable(
          this.name,
          `${why} while it ran ${JSON.stringify(clip(call.command))} (invocation ${call.invocationId}); the command may or may not have finished there`,
        ),
      );
    }
  }
}

function unavailable(name: string, why: string): ToolError {
  return new ToolError('node_unavailable', `node "${name}" is unavailable: ${why}`);
}

function clip(text: string, max = 80): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
