/*
 * One bound for every id a client may give (docs/protocol.md, "Ids"): each id-like field of
 * RunRequest and of the gateway's method params takes MAX_ID_LENGTH characters and refuses
 * one more, and an empty id. Issue 24: runId and agentId stopped at 200, sessionId at 500,
 * parentRunId and expectedRunId had no bound at all.
 */
import { describe, expect, it } from 'vitest';
import { MAX_ID_LENGTH, RunRequestSchema } from '../../src/core/index.js';
import { MethodParamsSchemas } from '../../src/gateway/index.js';

const submit = { sessionId: 's', input: 'x' };
// where | the schema | params with `id` in the id-like field
const fields: [string, { safeParse(value: unknown): { success: boolean } }, (id: string) => unknown][] = [
  ['RunRequest.runId', RunRequestSchema, (id) => ({ ...submit, runId: id })],
  ['RunRequest.sessionId', RunRequestSchema, (id) => ({ ...submit, sessionId: id })],
  ['RunRequest.agentId', RunRequestSchema, (id) => ({ ...submit, agentId: id })],
  ['RunRequest.parentRunId', RunRequestSchema, (id) => ({ ...submit, parentRunId: id })],
  ['RunRequest.expectedRunId', RunRequestSchema, (id) => ({ ...submit, expectedRunId: id })],
  ['run.submit sessionId', MethodParamsSchemas['run.submit'], (id) => ({ ...submit, sessionId: id })],
  ['run.wait runId', MethodParamsSchemas['run.wait'], (id) => ({ runId: id })],
  ['run.get runId', MethodParamsSchemas['run.get'], (id) => ({ runId: id })],
  ['run.history runId', MethodParamsSchemas['run.history'], (id) => ({ runId: id })],
  ['run.cancel runId', MethodParamsSchemas['run.cancel'], (id) => ({ runId: id })],
  ['session.stop sessionId', MethodParamsSchemas['session.stop'], (id) => ({ sessionId: id })],
  ['events.subscribe runId', MethodParamsSchemas['events.subscribe'], (id) => ({ runId: id })],
  ['events.subscribe sessionId', MethodParamsSchemas['events.subscribe'], (id) => ({ sessionId: id })],
  ['events.unsubscribe subscriptionId', MethodParamsSchemas['events.unsubscribe'], (id) => ({ subscriptionId: id })],
  [
    'approval.respond approvalId',
    MethodParamsSchemas['approval.respond'],
    (id) => ({ approvalId: id, decision: 'deny' }),
  ],
  ['runs.query sessionId', MethodParamsSchemas['runs.query'], (id) => ({ sessionId: id })],
];

describe(`every id a client gives is 1 to ${MAX_ID_LENGTH} characters`, () => {
  it.each(fields)('%s', (_where, schema, params) => {
    expect(schema.safeParse(params('a'.repeat(MAX_ID_LENGTH))).success).toBe(true);
    expect(schema.safeParse(params('a'.repeat(MAX_ID_LENGTH + 1))).success).toBe(false);
    expect(schema.safeParse(params('')).success).toBe(false);
  });
});
