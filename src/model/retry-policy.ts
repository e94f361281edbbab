/*
 * When a failed model request is tried again, and after how long. Only what a retry can fix is
 * retried: 408, 409, 429, 5xx and a connection that failed or reset. The server's own wait
 * (Retry-After, retry-after-ms, the rate-limit reset headers of OpenAI, Groq and Anthropic,
 * Gemini's RetryInfo) is honoured up to a cap; a longer one fails at once with
 * `rate_limited` naming it. Without one, the wait doubles per attempt with jitter drawn from
 * the injected source.
 */
import { APICallError } from '@ai-sdk/provider';
import { ModelError } from './model-error.js';
import { parseJson, serverMessageOfText } from './server-message.js';

export interface RetryOptions {
  /** Retries after the first attempt. */
  maxRetries: number;
  /** First backoff; doubled on every retry, then jittered to 50–100 %. */
  baseDelayMs: number;
  /** The longest wait a server may ask for before the turn fails with `rate_limited`. */
  maxWaitMs: number;
  /** A number in [0, 1): the jitter source. */
  random: () => number;
}

export interface Failure {
  /** For `run.retrying` and the final error: "HTTP 429: Rate limit reached", "connection failed: ...". */
  reason: string;
  status?: number;
  retryable: boolean;
  /** How long the server asked to wait, and which header or field said so. */
  serverWait?: { ms: number; source: string };
}

export type RetryDecision = { retry: true; waitMs: number } | { retry: false; error: ModelError };

const RETRYABLE_STATUS = (status: number) => status === 408 || status === 409 || status === 429 || status >= 500;

export function failureOf(error: unknown, where: string): Failure {
  if (APICallError.isInstance(error) && error.statusCode !== undefined && error.statusCode >= 400) {
    const status = error.statusCode;
    const detail = serverMessageOfText(error.responseBody ?? '') ?? error.message;
    return {
      reason: `HTTP ${status}${detail ? `: ${detail}` : ''}`,
      status,
      retryable: RETRYABLE_STATUS(status),
      ...withServerWait(serverWaitOf(error.responseHeaders ?? {}, error.responseBody, status)),
    };
  }
  const connection = connectionFailureOf(error);
  if (connection) return { reason: connectionReason(connection, where), retryable: true };
  return { reason: describeError(error), retryable: false };
}

export function decideRetry(failure: Failure, attempt: number, options: RetryOptions, where: string): RetryDecision {
  const rateLimited = failure.status === 429;
  if (!failure.retryable) {
    return {
      retry: false,
      error: new ModelError(
        'model_error',
        `model request to ${where} failed with ${failure.reason}${hintFor(failure.status)}`,
        failure.status,
      ),
    };
  }
  if (failure.serverWait && failure.serverWait.ms > options.maxWaitMs) {
    return {
      retry: false,
      error: new ModelError(
        'rate_limited',
        `${failure.reason}; the server asks to wait ${seconds(failure.serverWait.ms)} (${failure.serverWait.source}), ` +
          `longer than max_retry_wait_seconds (${seconds(options.maxWaitMs)}): try again later, or raise max_retry_wait_seconds`,
        failure.status,
      ),
    };
  }
  if (attempt >= options.maxRetries) {
    return {
      retry: false,
      error: new ModelError(
        rateLimited ? 'rate_limited' : 'model_error',
        `model request to ${where} failed ` +
          `${attempt === 0 ? 'on its only attempt (retries are off)' : `after ${attempt + 1} attempts`}; ` +
          `last: ${failure.reason}`,
        failure.status,
      ),
    };
  }
  const backoff = options.baseDelayMs * 2 ** attempt * (0.5 + options.random() / 2);
  return { retry: true, waitMs: Math.round(failure.serverWait?.ms ?? Math.min(backoff, options.maxWaitMs)) };
}

export function seconds(ms: number): string {
  const s = ms / 1000;
  return `${Number.isInteger(s) ? s : s.toFixed(1)} s`;
}

function withServerWait(wait: Failure['serverWait']): Pick<Failure, 'serverWait'> {
  return wait ? { serverWait: wait } : {};
}

function serverWaitOf(
  headers: Record<string, string>,
  body: string | undefined,
  status: number,
): Failure['serverWait'] {
  const header = (name: string) => headers[name] ?? headers[name.toLowerCase()];
  const ms = Number(header('retry-after-ms') ?? NaN);
  if (Number.isFinite(ms) && ms >= 0) return { ms, source: 'retry-after-ms' };
  const retryAfter = header('retry-after')?.trim();
  if (retryAfter) {
    const seconds = Number(retryAfter);
    if (Number.isFinite(seconds)) return { ms: Math.max(0, seconds * 1000), source: 'Retry-After' };
    // An HTTP date is wall-clock time, whatever clock the engine runs on.
    const date = Date.parse(retryAfter);
    if (!Number.isNaN(date)) return { ms: Math.max(0, date - Date.now()), source: 'Retry-After' };
  }
  if (status !== 429) return undefined;
  return googleRetryDelay(body) ?? exhaustedLimitReset(headers);
}

/** Gemini puts the wait in the body: `{error: {details: [{@type: ...RetryInfo, retryDelay: "34.4s"}]}}`. */
function googleRetryDelay(body: string | undefined): Failure['serverWait'] {
  const details = (parseJson(body ?? '') as { error?: { details?: unknown } } | undefined)?.error?.details;
  if (!Array.isArray(details)) return undefined;
  for (const detail of details as { '@type'?: unknown; retryDelay?: unknown }[]) {
    if (
      typeof detail['@type'] === 'string' &&
      detail['@type'].endsWith('RetryInfo') &&
      typeof detail.retryDelay === 'string'
    ) {
      const ms = durationMs(detail.retryDelay);
      if (ms !== undefined) return { ms, source: 'RetryInfo.retryDelay' };
    }
  }
  return undefined;
}

/**
 * The reset time of a rate limit the server says is used up (its remaining count is 0):
 * OpenAI and Groq send durations (`x-ratelimit-reset-tokens: 6m0s`), Anthropic RFC 3339
 * times (`anthropic-ratelimit-tokens-reset`).
 */
function exhaustedLimitReset(headers: Record<string, string>): Failure['serverWait'] {
  let longest: Failure['serverWait'];
  for (const [name, value] of Object.entries(headers)) {
    const match =
      /^(x-ratelimit|anthropic-ratelimit)-reset-(.+)$/.exec(name) ?? /^(anthropic-ratelimit)-(.+)-reset$/.exec(name);
    if (!match) continue;
    const remaining =
      match[1] === 'x-ratelimit'
        ? headers[`x-ratelimit-remaining-${match[2]}`]
        : headers[`anthropic-ratelimit-${match[2]}-remaining`];
    if (remaining?.trim() !== '0') continue;
    const date = match[1] === 'anthropic-ratelimit' ? Date.parse(value) : NaN;
    const ms = Number.isNaN(date) ? durationMs(value) : Math.max(0, date - Date.now());
    if (ms !== undefined && (!longest || ms > longest.ms)) longest = { ms, source: name };
  }
  return longest;
}

/** "1s", "6m0s", "2m59.56s", "20ms", "1h2m", "34.4s". */
function durationMs(text: string): number | undefined {
  const parts = [...text.trim().matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== text.trim()) return undefined;
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;
  return parts.reduce((sum, [, n, u]) => sum + Number(n) * unit[u as keyof typeof unit], 0);
}

const CONNECTION_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CLOSED',
]);

/**
 * What went wrong with the connection, if that is what failed: a refused or reset socket, a
 * body cut off. Searched through causes and through an AggregateError's errors: a refused
 * `localhost` tried on ::1 and 127.0.0.1 fails with one whose own message is empty (and whose
 * own code a wrapper may drop); its errors name each address.
 */
function connectionFailureOf(error: unknown): { code: string; message: string } | undefined {
  const seen = new Set<unknown>();
  for (let current = error; current instanceof Error && !seen.has(current); current = current.cause) {
    seen.add(current);
    const code = (current as { code?: unknown }).code;
    if (current instanceof AggregateError) {
      const failures = (current.errors as unknown[]).map(connectionFailureOf).filter((f) => f !== undefined);
      if (failures.length > 0)
        return { code: failures[0]!.code, message: [...new Set(failures.map((f) => f.message))].join('; ') };
    }
    if (typeof code === 'string' && CONNECTION_CODES.has(code)) return { code, message: current.message || code };
  }
  return undefined;
}

function connectionReason(connection: { code: string; message: string }, where: string): string {
  if (connection.code === 'ECONNREFUSED') {
    return `nothing listens at ${where} (${connection.message}): start the model server, or check that base_url names the host and port it listens on`;
  }
  return `connection to ${where} failed: ${connection.message} (${connection.code})`;
}

function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  return error.cause instanceof Error ? `${error.message} (${error.cause.message})` : error.message;
}

function hintFor(status: number | undefined): string {
  if (status === 401 || status === 403) return ' (check the API key)';
  if (status === 404) return ' (check base_url, which usually ends in /v1, and the model name)';
  return '';
}
