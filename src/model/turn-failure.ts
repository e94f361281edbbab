/*
 * Why a turn failed, in the server's own words wherever they can be found: an HTTP error
 * body, an error chunk inside the stream (as the provider package parsed it, or as it could
 * not), a body that was not an event stream, or a connection that broke.
 */
import { APICallError, JSONParseError, TypeValidationError } from '@ai-sdk/provider';
import { StreamErrorPart } from './reply-stream.js';
import { failureOf, type Failure } from './retry-policy.js';
import { serverMessageOf, serverMessageOfText, statusOf, truncate } from './server-message.js';
import type { StreamWitness } from './stream-witness.js';

const RETRYABLE_STATUS = (status: number) => status === 408 || status === 409 || status === 429 || status >= 500;

export function failureOfTurn(error: unknown, witness: StreamWitness, where: string): Failure {
  const reported = error instanceof StreamErrorPart ? error.error : error;
  if (APICallError.isInstance(reported) && reported.statusCode !== undefined && reported.statusCode >= 400)
    return failureOf(reported, where);
  const http = failureOf(reported, where);
  if (http.retryable) return http; // the connection broke
  const said = witness.serverMessage();
  const detail =
    said?.message ??
    messageOf(reported) ??
    (witness.reached && witness.empty ? 'the server closed the stream without sending any event' : http.reason);
  const status = said?.status ?? statusOf(reported);
  return {
    reason: `${status !== undefined ? `HTTP ${status} ` : ''}${error instanceof StreamErrorPart ? 'in the stream' : 'response'}: ${detail}`,
    ...(status !== undefined ? { status } : {}),
    retryable: status !== undefined && RETRYABLE_STATUS(status),
  };
}

/** The message of an error the package passed on: a chunk it could not parse, or the error object a chunk carried. */
function messageOf(error: unknown): string | undefined {
  if (TypeValidationError.isInstance(error))
    return serverMessageOf(error.value) ?? truncate(JSON.stringify(error.value));
  if (JSONParseError.isInstance(error)) return serverMessageOfText(error.text);
  if (error instanceof Error) return undefined;
  return (
    serverMessageOf({ error }) ??
    serverMessageOf(error) ??
    (error === undefined ? undefined : truncate(JSON.stringify(error)))
  );
}
