/*
 * The structured log of runs: JSON lines bound to the run and session ids, with no token and
 * no API key in them (the approval redaction applied to messages and fields alike), the level
 * from the config or SWITCHYARD_LOG_LEVEL, and human-readable lines for a terminal.
 */
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { createLogger, logLevelOf, startTelemetry } from '../../src/telemetry/index.js';
import { defineTool, ToolError } from '../../src/tools/index.js';
import { engineFixture } from '../engine/fixtures.js';
import { meteredModel } from './fixtures.js';

const makeEngine = engineFixture();

const API_KEY = 'sk-proj-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c';
const BEARER = 'eyJhbGciOiJIUzI1NiJ9.c2VjcmV0LXRva2Vu.sig';

const leakyTool = defineTool({
  name: 'fetch_page',
  description: 'Fails the way a careless HTTP client does: with the request headers in the message.',
  input: z.object({ url: z.string() }).strict(),
  readOnly: true,
  execute: async () => {
    throw new ToolError('http_error', `GET failed: 401 (Authorization: Bearer ${BEARER}; x-api-key: ${API_KEY})`);
  },
});

async function loggedRun(input: string, level: 'info' | 'debug' = 'debug') {
  const lines: string[] = [];
  const logger = await createLogger({ level, env: {}, write: (line) => lines.push(line) });
  const telemetry = await startTelemetry({ telemetry: { metrics: false }, logger });
  const engine = await makeEngine({
    models: {
      leaky: meteredModel((first) =>
        first === 'model-down'
          ? { error: `the provider refused the key ${API_KEY}` }
          : { toolCalls: [{ name: 'fetch_page', args: { url: `https://user:${API_KEY}@example.com/` } }] },
      ),
    },
    tools: [leakyTool],
    config: { execution: { default_model: 'leaky' } },
  });
  await telemetry.attach(engine);
  const { runId } = await engine.submit({ sessionId: 'logged', input });
  await engine.wait(runId);
  await engine.history(runId);
  await telemetry.close();
  return { runId, lines, parsed: lines.map((line) => JSON.parse(line) as Record<string, unknown>) };
}

describe('run logs', () => {
  it('bind every line of a run to its run and session ids, and hold no token or API key', async () => {
    const { runId, lines, parsed } = await loggedRun(`my token=${BEARER}, please fetch it`);
    const runLines = parsed.filter((line) => line.runId !== undefined);
    expect(runLines.map((line) => line.msg)).toEqual([
      'run started',
      'model turn started',
      'model answered',
      'tool batch scheduled',
      'tool call started',
      'tool call failed',
      'model turn started',
      'model answered',
      'run completed',
    ]);
    expect(runLines.every((line) => line.runId === runId && line.sessionId === 'logged')).toBe(true);
    expect(runLines.find((line) => line.msg === 'tool call failed')).toMatchObject({
      level: 'info',
      error: { code: 'http_error', message: 'GET failed: 401 (Authorization: ***' },
    });
    expect(runLines.find((line) => line.msg === 'model answered')).toMatchObject({
      toolCalls: ['fetch_page'],
      usage: { input: 11, output: 5, cached: 3 },
    });
    for (const secret of [API_KEY, BEARER, 'c2VjcmV0LXRva2Vu'])
      expect(lines.filter((line) => line.includes(secret))).toEqual([]);
  });

  it('redact a provider error that names the key, at info level', async () => {
    const { runId, lines, parsed } = await loggedRun('model-down', 'info');
    expect(parsed.map((line) => line.msg)).toEqual(['run started', 'run failed']);
    expect(parsed[1]).toMatchObject({
      level: 'warn',
      runId,
      error: { code: 'model_error', message: 'the provider refused the key sk-***' },
    });
    expect(lines.filter((line) => line.includes(API_KEY))).toEqual([]);
  });

  it('redact secrets in any message and field, also in errors', async () => {
    const lines: string[] = [];
    const logger = await createLogger({ level: 'info', env: {}, write: (line) => lines.push(line) });
    logger.child({ runId: 'r1' }).error(
      {
        err: new Error(`connect to postgres://app:${API_KEY}@db/x failed`),
        headers: { authorization: `Bearer ${BEARER}` },
      },
      `export OPENAI_API_KEY=${API_KEY}`,
    );
    const [line] = lines.map((text) => JSON.parse(text) as Record<string, unknown>);
    expect(line).toMatchObject({
      level: 'error',
      runId: 'r1',
      msg: 'export OPENAI_API_KEY=***',
      err: { type: 'Error', message: 'connect to postgres://app:***@db/x failed' },
      headers: { authorization: '***' },
    });
    expect(lines.join('\n')).not.toContain(API_KEY);
    expect(lines.join('\n')).not.toContain(BEARER);
  });

  it('take the level from SWITCHYARD_LOG_LEVEL over the config, when it names one', () => {
    expect(logLevelOf('info', { SWITCHYARD_LOG_LEVEL: 'debug' })).toBe('debug');
    expect(logLevelOf('info', { SWITCHYARD_LOG_LEVEL: ' WARN ' })).toBe('warn');
    expect(logLevelOf('info', { SWITCHYARD_LOG_LEVEL: 'loud' })).toBe('info');
    expect(logLevelOf('error', {})).toBe('error');
  });

  it('are human-readable on a terminal', async () => {
    const lines: string[] = [];
    const logger = await createLogger({ level: 'info', env: {}, pretty: true, write: (line) => lines.push(line) });
    logger.child({ runId: 'run-7' }).info({ model: 'scripted' }, 'run started');
    const text = lines.join('\n');
    expect(() => JSON.parse(lines[0]!)).toThrow();
    expect(text).toMatch(/INFO.*run started/);
    expect(text).toContain('run-7');
  });
});
