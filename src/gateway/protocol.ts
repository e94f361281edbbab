/*
 * The JSON-RPC 2.0 envelope the gateway speaks: the zod schema of an incoming request, the
 * error codes, the frames it sends (responses, errors, notifications), and the prelude every
 * received frame passes (JSON text, then a shape) before it is dispatched.
 *
 * As JSON-RPC 2.0 says: a request without an id is a notification and is never answered; a
 * batch (an array) is answered with one array that holds no answer for its notifications.
 * Choices within it (docs/gateway-connections.md): an id is a string (at most 200 characters)
 * or a finite number, a null id is an invalid request; binary frames are answered -32600
 * (id null) and the connection stays open.
 */
import type { RawData } from 'ws';
import { z } from 'zod';
import { describeIssue } from '../config/issue-text.js';
import { jsonSafe } from './json-safe.js';

export const RpcErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  /** An EngineError (its code in `data.code`) or a gateway limit (`too_many_subscriptions`). */
  EngineError: -32000,
} as const;

export const RequestIdSchema = z.union([z.string().max(200), z.number().finite()]);
export type RequestId = z.infer<typeof RequestIdSchema>;

export const RequestFrameSchema = z
  .object({
    jsonrpc: z.literal('2.0'),
    // Absent: a notification. A null id is refused as an invalid request (JSON-RPC discourages it).
    id: RequestIdSchema.optional(),
    method: z.string().min(1).max(100),
    // JSON-RPC allows by-position (array) params; no method here takes them, which is an
    // invalid-params answer from the method, not an invalid request. Checked, not copied: the
    // method's own schema must see the params exactly as sent (a "__proto__" key included).
    params: z
      .custom<Record<string, unknown> | unknown[]>(
        (v) => typeof v === 'object' && v !== null,
        'params must be an object or an array',
      )
      .optional(),
  })
  .strict();
export type RequestFrame = z.infer<typeof RequestFrameSchema>;

export interface RpcErrorBody {
  code: number;
  message: string;
  data?: unknown;
}

/** An error a method handler throws to answer with a specific JSON-RPC error. */
export class RpcError extends Error {
  override readonly name = 'RpcError';
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }

  toBody(): RpcErrorBody {
    return { code: this.code, message: this.message, ...(this.data !== undefined ? { data: this.data } : {}) };
  }
}

export interface ZodIssueSummary {
  path: string;
  message: string;
}

/** Each issue with the value it is about, when the parse had `reportInput: true` (a frame's params do). */
export function issuesOf(error: z.ZodError): ZodIssueSummary[] {
  return error.issues.map((issue) => ({ path: issue.path.map(String).join('.'), message: describeIssue(issue) }));
}

/**
 * JSON text of a value from the engine. Events and results are plain data; a BigInt becomes
 * its decimal string, and anything JSON.stringify still refuses (a cycle in a tool's output)
 * is sent as a size-capped copy rather than lost.
 */
export function toJson(value: unknown): string {
  try {
    return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)) ?? 'null';
  } catch {
    return JSON.stringify(jsonSafe(value, FALLBACK_LIMITS)) ?? 'null';
  }
}

const FALLBACK_LIMITS = { depth: 12, items: 1_000, keys: 1_000, chars: 1_000_000 };

export function resultFrame(id: RequestId, result: unknown): string {
  return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${toJson(result ?? null)}}`;
}

export function errorFrame(id: RequestId | null, error: RpcErrorBody): string {
  return JSON.stringify({ jsonrpc: '2.0', id, error });
}

/** An error frame from its parts; `data` is left out when undefined. */
export function errorAnswer(id: RequestId | null, code: number, message: string, data?: unknown): string {
  return errorFrame(id, { code, message, ...(data !== undefined ? { data } : {}) });
}

/** A notification frame; `paramsJson` is already serialized (shared between connections). */
export function notificationFrame(method: string, paramsJson: string): string {
  return `{"jsonrpc":"2.0","method":${JSON.stringify(method)},"params":${paramsJson}}`;
}

/** The id of a frame that failed validation, when it has a usable one; null otherwise. */
export function idOf(raw: unknown): RequestId | null {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return null;
  const parsed = RequestIdSchema.safeParse((raw as { id?: unknown }).id);
  return parsed.success ? parsed.data : null;
}

/** A text frame parsed as JSON, or the JSON-RPC error it earns (binary frames, bad JSON). */
export type JsonFrame = { ok: true; value: unknown } | { ok: false; code: number; message: string };

export function readJsonFrame(data: RawData, isBinary: boolean, binaryMessage: string): JsonFrame {
  if (isBinary) return { ok: false, code: RpcErrorCode.InvalidRequest, message: binaryMessage };
  return parseJsonText(textOf(data));
}

export function parseJsonText(text: string): JsonFrame {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false, code: RpcErrorCode.ParseError, message: 'parse error: the frame is not valid JSON' };
  }
}

/**
 * What a frame must look like before it is dispatched, and what one of another shape earns:
 * the error frame to send back, or undefined to drop it unanswered (whoever drops it logs it).
 */
export interface FrameShape<T> {
  schema: z.ZodType<T>;
  refuse(raw: unknown, issues: ZodIssueSummary[]): string | undefined;
}

export type ShapedFrame<T> = { ok: true; frame: T } | { ok: false; answer: string | undefined };

export function readShape<T>(shape: FrameShape<T>, raw: unknown): ShapedFrame<T> {
  const parsed = shape.schema.safeParse(raw, { reportInput: true });
  return parsed.success
    ? { ok: true, frame: parsed.data }
    : { ok: false, answer: shape.refuse(raw, issuesOf(parsed.error)) };
}

function textOf(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString('utf8');
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.from(data).toString('utf8');
}
