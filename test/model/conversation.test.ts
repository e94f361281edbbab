/*
 * A session's conversation against strict servers: a malformed tool call in one run must not
 * poison the session's next run. Also what a run makes of a turn's outcome: usage summed into
 * run.completed and RunResult, a cut or filtered final answer failing the run, and a retry
 * that would outlive the run's deadline not attempted.
 */
import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { anthropicModel } from '../../src/model/anthropic.js';
import { googleModel } from '../../src/model/google.js';
import { openAICompatibleModel } from '../../src/model/openai.js';
import { defineTool } from '../../src/tools/index.js';
import { engineFixture, expectWellFormedHistory } from '../engine/fixtures.js';
import { recording, replay, replayServer, type Received, type Reply } from './replay-server.js';
import { openAIChatRequest, refusal } from './request-formats.js';

const newEngine = engineFixture();

/** A server that answers 400 (Qwen's own words) to any request its format refuses, else the next reply. */
function strict(replies: Reply[], refusals: string[]) {
  let next = 0;
  return (request: Received): Reply => {
    const problem = refusal(openAIChatRequest.safeParse(request.body));
    if (problem) {
      refusals.push(problem);
      return {
        status: 400,
        headers: { 'content-type': 'application/json' },
        body: recording('qwen-malformed-arguments-400.json'),
      };
    }
    return replies[Math.min(next++, replies.length - 1)]!;
  };
}

describe('a malformed tool call does not poison the session', () => {
  it(
    'turn 1 writes arguments that are not JSON; the call fails with invalid_arguments quoting them; ' +
      'this run and the next succeed against a strict server',
    async () => {
      const execute = vi.fn(async () => 'written');
      const fileWrite = defineTool({
        name: 'file_write',
        description: 'Writes a file.',
        input: z.object({ path: z.string(), content: z.string() }),
        execute,
      });
      const refusals: string[] = [];
      const { origin, requests } = await replayServer(
        strict([replay('openai-length-cut-tool-arguments.sse'), replay('azure-content-filter-results.sse')], refusals),
      );
      const engine = await newEngine({
        models: { qwen: openAICompatibleModel({ baseURL: `${origin}/v1`, model: 'qwen-plus', maxRetries: 0 }) },
        config: { execution: { default_model: 'qwen' } },
        tools: [fileWrite],
      });

      const first = await engine.submit({ sessionId: 'notes', input: 'write the café menu' });
      const firstResult = await engine.wait(first.runId);
      expect(firstResult).toMatchObject({
        state: 'completed',
        output: 'Hello World',
        usage: { inputTokens: 325, outputTokens: 21, cachedTokens: 256 },
      });
      const history = await engine.history(first.runId);
      expectWellFormedHistory(history);
      expect(execute).not.toHaveBeenCalled();
      const failed = history.find((e) => e.type === 'tool.finished');
      expect(failed).toMatchObject({ ok: false, error: { code: 'invalid_arguments' } });
      expect(failed?.type === 'tool.finished' && failed.error?.message).toContain(
        JSON.stringify('{"path":"notes/café.md","content":"# Menu'),
      );
      expect(history.filter((e) => e.type === 'model.message').map((e) => e.finishReason)).toEqual(['length', 'stop']);
      expect(history.at(-1)).toMatchObject({
        type: 'run.completed',
        usage: { turns: 2, inputTokens: 325, outputTokens: 21, cachedTokens: 256 },
      });

      const second = await engine.submit({ sessionId: 'notes', input: 'and the wine list?' });
      expect(await engine.wait(second.runId)).toMatchObject({
        state: 'completed',
        output: 'Hello World',
        usage: { inputTokens: 15, outputTokens: 5 },
      });

      expect(refusals).toEqual([]);
      expect(requests).toHaveLength(3);
      for (const { body } of requests.slice(1)) {
        expect(JSON.stringify(body)).not.toContain('"arguments":"{\\"path\\":\\"notes/caf');
        expect(body['messages']).toContainEqual({
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_Wq8nK2', type: 'function', function: { name: 'file_write', arguments: '{}' } }],
        });
        expect(body['messages']).toContainEqual({
          role: 'tool',
          tool_call_id: 'call_Wq8nK2',
          content: expect.stringContaining('invalid_arguments'),
        });
      }
    },
  );
});

describe('the outcome of a turn', () => {
  it('a final answer cut by max_tokens fails the run with model_truncated; the session goes on', async () => {
    const { origin } = await replayServer(replay('anthropic-max-tokens.sse'), replay('anthropic-text.sse'));
    const engine = await newEngine({
      models: { claude: anthropicModel({ baseURL: `${origin}/v1`, apiKey: 'k', model: 'claude-sonnet-4-5' }) },
      config: { execution: { default_model: 'claude' } },
    });
    const cut = await engine.submit({ sessionId: 's', input: 'write a long essay' });
    const result = await engine.wait(cut.runId);
    expect(result).toMatchObject({ state: 'failed', error: { code: 'model_truncated' } });
    expect(result.error?.message).toContain('raise max_tokens');
    const history = await engine.history(cut.runId);
    expect(history.find((e) => e.type === 'model.message')).toMatchObject({
      text: 'Here is the first part of a very long',
      finishReason: 'length',
    });
    const next = await engine.submit({ sessionId: 's', input: 'shorter please' });
    expect(await engine.wait(next.runId)).toMatchObject({ state: 'completed' });
  });

  it('a prompt the content filter blocks fails the run with content_filtered', async () => {
    const { origin } = await replayServer(replay('google-prompt-blocked.sse'));
    const engine = await newEngine({
      models: { gemini: googleModel({ baseURL: `${origin}/v1beta`, apiKey: 'k', model: 'gemini-3.7-flash' }) },
      config: { execution: { default_model: 'gemini' } },
    });
    const run = await engine.submit({ sessionId: 's', input: 'something prohibited' });
    expect(await engine.wait(run.runId)).toMatchObject({ state: 'failed', error: { code: 'content_filtered' } });
  });

  it("a retry that would start after the run's deadline fails the run at once with the server's reason, not later with timeout", async () => {
    const { origin, requests } = await replayServer({
      status: 429,
      headers: { 'content-type': 'application/json', 'retry-after': '30' },
      body: JSON.stringify({ error: { message: 'Rate limit reached for gpt-4o' } }),
    });
    const engine = await newEngine({
      models: { openai: openAICompatibleModel({ baseURL: `${origin}/v1`, model: 'gpt-4o' }) },
      config: { execution: { default_model: 'openai' } },
    });
    const run = await engine.submit({ sessionId: 's', input: 'hi', timeoutMs: 20_000 });
    const result = await engine.wait(run.runId);
    expect(result).toMatchObject({ state: 'failed', error: { code: 'rate_limited' } });
    expect(result.error?.message).toContain(
      "HTTP 429: Rate limit reached for gpt-4o; the retry in 30 s would start after the run's deadline",
    );
    expect(requests).toHaveLength(1);
    expect((await engine.history(run.runId)).some((e) => e.type === 'run.retrying')).toBe(false);
  });
});
