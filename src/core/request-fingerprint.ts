/*
 * What makes two submits "the same request" (docs/runs.md, "A retried submit"): a client whose
 * connection died resubmits with the same runId, and the same request answers with the first
 * one's outcome instead of being a second message. Same means: the fields the client gave,
 * as validated, in canonical JSON (keys sorted, so their order does not matter), without the
 * transport-only ones — `traceparent`, which a retry sends anew for its own attempt. Defaults
 * are not filled in first: a request that leaves a field out is not the same as one that names
 * the default (the default may change with a reload between the two).
 */
import { createHash } from 'node:crypto';
import { canonicalJson } from '../concurrency/canonical-json.js';

/** Fields of a request that say how it travelled, not what it asks for. */
export const TRANSPORT_ONLY_FIELDS = ['traceparent'] as const;

/** `sha256:` and the hex digest of the request's canonical JSON without its transport-only fields. */
export function requestFingerprintOf(request: Record<string, unknown>): string {
  const fields: Record<string, unknown> = { ...request };
  for (const field of TRANSPORT_ONLY_FIELDS) delete fields[field];
  return `sha256:${createHash('sha256').update(canonicalJson(fields)).digest('hex')}`;
}
