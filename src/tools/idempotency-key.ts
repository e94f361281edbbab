/*
 * The idempotency key of a tool call (docs/durable-runs.md): derived from the run, the model
 * turn and the call's position in that turn's batch, never from the model's call id (providers
 * give a call a new id on every attempt). The same call of a resumed run gets the same key, so
 * a tool that talks to an outside system can pass it on and let that system drop a repeat.
 */
import { createHash } from 'node:crypto';

/** `sy-` and 32 hex digits (128 bits of SHA-256 over the three parts). */
export function idempotencyKeyOf(runId: string, turn: number, index: number): string {
  if (!Number.isSafeInteger(turn) || turn < 0)
    throw new RangeError(`idempotencyKeyOf: turn ${turn} is not a whole number >= 0`);
  if (!Number.isSafeInteger(index) || index < 0)
    throw new RangeError(`idempotencyKeyOf: index ${index} is not a whole number >= 0`);
  // JSON keeps the parts apart whatever the run id holds ("a:1" + 2 and "a" + "1:2" differ).
  const digest = createHash('sha256')
    .update(JSON.stringify([runId, turn, index]))
    .digest('hex');
  return `sy-${digest.slice(0, 32)}`;
}
