/*
 * Bad requests (docs/runs.md, "The request"): every one is rejected at submit with a typed
 * EngineError — invalid_request with the zod issue paths, duplicate_run_id, unknown_model — and
 * changes nothing: same snapshot, no event, no run.
 */
import { describe, expect, it } from 'vitest';
import { EngineError } from '../../src/engine/index.js';
import type { Engine, RunRequest } from '../../src/engine/index.js';
import { scriptedModel } from '../../src/model/index.js';
import { engineFixture, holdTool, recordEvents } from './fixtures.js';
import { until } from '../support/eventually.js';
import { settle } from '../support/settle.js';

const newEngine = engineFixture();

/** An engine with one run busy on session "s", so a bad message there has something to disturb. */
async function busyEngine() {
  const hold = holdTool();
  const engine = await newEngine({
    tools: [hold.tool],
    models: { scripted: scriptedModel([{ toolCalls: [{ name: 'hold', args: {} }] }, { text: 'finished' }]) },
  });
  const running = await engine.submit({ sessionId: 's', input: 'busy', runId: 'running' });
  await until(() => hold.isHolding(running.runId), 'the run holds');
  return { engine, hold, running };
}

/** Submits `request` and expects `code`; checks that nothing observable changed. */
async function expectRejected(engine: Engine, request: unknown, code: string): Promise<EngineError> {
  const before = engine.snapshot();
  const statusBefore = engine.status('running');
  const recorder = recordEvents(engine);
  // Deliberately not a RunRequest: the engine must validate what crosses its edge.
  const error: unknown = await engine.submit(request as RunRequest).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(EngineError);
  expect((error as EngineError).code).toBe(code);
  await settle();
  expect(engine.snapshot()).toEqual(before);
  expect(engine.status('running')).toEqual(statusBefore);
  expect(recorder.all).toEqual([]);
  recorder.close();
  return error as EngineError;
}

describe('invalid_request', () => {
  const base = { sessionId: 's', input: 'hello' };
  const cases: [description: string, request: unknown, path: string][] = [
    ['not an object', 'hello', ''],
    ['null', null, ''],
    ['missing sessionId', { input: 'hello' }, 'sessionId'],
    ['sessionId of the wrong type', { ...base, sessionId: 42 }, 'sessionId'],
    ['empty sessionId', { ...base, sessionId: '' }, 'sessionId'],
    ['missing input', { sessionId: 's' }, 'input'],
    ['input of the wrong type', { ...base, input: ['hello'] }, 'input'],
    ['an unknown key', { ...base, urgency: 'high' }, ''],
    ['an unknown priority', { ...base, priority: 'high' }, 'priority'],
    ['a startBy that is not an ISO time', { ...base, startBy: 'tomorrow' }, 'startBy'],
    [
      'both startBy and startWithinMs',
      { ...base, startBy: '2030-01-01T00:00:00Z', startWithinMs: 1000 },
      'startWithinMs',
    ],
    ['a zero steerDeadlineMs', { ...base, steerDeadlineMs: 0 }, 'steerDeadlineMs'],
    ['an unknown steerEscalation', { ...base, steerEscalation: 'drop' }, 'steerEscalation'],
    ['empty runId', { ...base, runId: '' }, 'runId'],
    ['a relative workspace', { ...base, workspace: 'projects/app' }, 'workspace'],
    ['a negative timeoutMs', { ...base, timeoutMs: -5 }, 'timeoutMs'],
    ['timeoutMs as a string', { ...base, timeoutMs: '1000' }, 'timeoutMs'],
    ['a fractional maxIterations', { ...base, maxIterations: 1.5 }, 'maxIterations'],
    ['maxIterations 0', { ...base, maxIterations: 0 }, 'maxIterations'],
    ['an unknown busyPolicy', { ...base, busyPolicy: 'later' }, 'busyPolicy'],
    ['an attachment without mediaType', { ...base, attachments: [{ name: 'a.txt' }] }, 'attachments.0.mediaType'],
    ['an unknown sandbox backend', { ...base, sandbox: { backend: 'docker' } }, 'sandbox.backend'],
    ['an unknown sandbox key', { ...base, sandbox: { gpu: true } }, 'sandbox'],
    ['a non-string metadata value', { ...base, metadata: { tries: 3 } }, 'metadata.tries'],
    ['unattended as a string', { ...base, unattended: 'yes' }, 'unattended'],
  ];

  it.each(cases)('%s', async (_description, request, path) => {
    const { engine } = await busyEngine();
    const error = await expectRejected(engine, request, 'invalid_request');
    const issues = (error.details as { issues: { path: string; message: string }[] }).issues;
    expect(issues.map((i) => i.path)).toContain(path);
    expect(error.message).toMatch(/invalid run request/);
  });

  it('names the unknown key', async () => {
    const { engine } = await busyEngine();
    const error = await expectRejected(engine, { sessionId: 's', input: 'x', urgency: 'high' }, 'invalid_request');
    expect(error.message).toContain('urgency');
  });

  it('reports every bad field at once', async () => {
    const { engine } = await busyEngine();
    const error = await expectRejected(engine, { sessionId: 1, input: 2, busyPolicy: 'x' }, 'invalid_request');
    const paths = (error.details as { issues: { path: string }[] }).issues.map((i) => i.path).sort();
    expect(paths).toEqual(['busyPolicy', 'input', 'sessionId']);
  });
});

describe('duplicate_run_id', () => {
  it('rejects the runId of a running run', async () => {
    const { engine } = await busyEngine();
    await expectRejected(engine, { sessionId: 'elsewhere', input: 'x', runId: 'running' }, 'duplicate_run_id');
  });

  it('rejects the runId of a finished run', async () => {
    const { engine } = await busyEngine();
    const done = await engine.submit({ sessionId: 'other', input: 'x', runId: 'done', busyPolicy: 'queue' });
    expect(done.outcome).toBe('started');
    await until(() => engine.status('done')?.state === 'running', 'done runs');
    await engine.cancel('done');
    await engine.wait('done');
    await expectRejected(engine, { sessionId: 'other', input: 'y', runId: 'done' }, 'duplicate_run_id');
  });

  it('rejects the id of a message that went in as a steer', async () => {
    const { engine } = await busyEngine();
    expect(await engine.submit({ sessionId: 's', input: 'steer', runId: 'steer-1' })).toMatchObject({
      outcome: 'steered',
    });
    await expectRejected(engine, { sessionId: 'x', input: 'y', runId: 'steer-1' }, 'duplicate_run_id');
  });
});

describe('unknown_model', () => {
  it.each(['gpt-9', 'nowhere:gpt-9'])('rejects model %s', async (model) => {
    const { engine } = await busyEngine();
    const error = await expectRejected(engine, { sessionId: 'other', input: 'x', model }, 'unknown_model');
    expect(error.message).toContain('scripted');
  });

  it('accepts "provider:model" of a known provider', async () => {
    const engine = await newEngine();
    const run = await engine.submit({ sessionId: 's', input: 'x', model: 'scripted:any-name' });
    expect((await engine.wait(run.runId)).state).toBe('completed');
  });
});
