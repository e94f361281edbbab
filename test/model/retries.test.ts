/*
 * Retries, against a server on 127.0.0.1: which failures are retried (408, 409, 429, 5xx, a
 * failed connection) and which fail at once, how long each wait is (the server's own, capped,
 * or a jittered backoff on the engine clock from an injected source), that every retry is
 * reported, and that none starts after the run's deadline. Waits are read off a recording
 * SimulatedClock and each request is stamped with its time: no assertion on wall-clock time.
 */
import { describe, expect, it, vi } from 'vitest';
import { SimulatedClock } from 'xstate';
import type { Clock } from '../../src/core/clock.js';
import { anthropicModel } from '../../src/model/anthropic.js';
import { googleModel } from '../../src/model/google.js';
import { openAICompatibleModel } from '../../src/model/openai.js';
import type { ProviderOptions } from '../../src/model/provider-options.js';
import {
  collect,
  collectUntilError,
  modelRequest,
  recording,
  replay,
  replayServer,
  seededRandom,
  type Reply,
} from './replay-server.js';
import { until } from '../support/eventually.js';
import { RecordingClock } from '../support/recording-clock.js';

const ok = replay('openai-text-then-tool-call.sse');
const json = (status: number, body: unknown, headers: Record<string, string> = {}): Reply => ({
  status,
  headers: { 'content-type': 'application/json', ...headers },
  body: typeof body === 'string' ? body : JSON.stringify(body),
});

async function openai(replies: Reply[], options: Partial<ProviderOptions> = {}) {
  const server = await replayServer(...replies);
  return {
    ...server,
    provider: openAICompatibleModel({ baseURL: `${server.origin}/v1`, model: 'm', random: () => 0.5, ...options }),
  };
}

/** Lets the provider reach its `count`th wait: it reports the retry, then sets the wait's timer. */
async function waitForRetries(onRetry: ReturnType<typeof vi.fn>, count: number) {
  await until(() => onRetry.mock.calls.length >= count, `retry ${count} is reported`);
  expect(onRetry).toHaveBeenCalledTimes(count);
}

/** A fetch that stamps each request with the clock's time when it goes out. */
function stamped(clock: Clock) {
  const sentAt: number[] = [];
  const fetchStamped: typeof fetch = (input, init) => {
    sentAt.push(clock.now!());
    return fetch(input, init);
  };
  return { sentAt, fetch: fetchStamped };
}

describe('what is retried', () => {
  it.each([408, 409, 429, 500, 502, 503, 529])(
    "HTTP %i is retried, and the retry is reported with the server's message",
    async (status) => {
      const { provider, requests } = await openai([
        json(status, { error: { message: `busy (${status})` } }, { 'retry-after': '0' }),
        ok,
      ]);
      const onRetry = vi.fn();
      const chunks = await collect(provider, modelRequest({ onRetry }));
      expect(chunks.at(-1)).toMatchObject({ type: 'message', finishReason: 'tool_calls' });
      expect(requests).toHaveLength(2);
      expect(onRetry.mock.calls).toEqual([[1, `HTTP ${status}: busy (${status}); retrying in 0 s`]]);
    },
  );

  it.each([
    {
      status: 400,
      body: recording('qwen-malformed-arguments-400.json').toString(),
      says: 'HTTP 400: <400> InternalError.Algo.InvalidParameter: The "function.arguments" parameter of the code model must be in JSON format.',
    },
    {
      status: 400,
      body: recording('vllm-object-error-400.json').toString(),
      says: "HTTP 400: This model's maximum context length is 4096 tokens",
    },
    {
      status: 401,
      body: { error: { message: 'Incorrect API key provided' } },
      says: 'HTTP 401: Incorrect API key provided (check the API key)',
    },
    {
      status: 404,
      body: { error: 'model "qwen3" not found, try pulling it first' },
      says: 'HTTP 404: model "qwen3" not found, try pulling it first (check base_url',
    },
    {
      status: 422,
      body: recording('mistral-extra-forbidden-422.json').toString(),
      says: 'HTTP 422: body.stream_options.include_usage: Extra inputs are not permitted',
    },
  ])('HTTP $status is not retried and says $says', async ({ status, body, says }) => {
    const { provider, requests } = await openai([json(status, body)]);
    const onRetry = vi.fn();
    const { error } = await collectUntilError(provider, modelRequest({ onRetry }));
    expect(requests).toHaveLength(1);
    expect(onRetry).not.toHaveBeenCalled();
    expect(error).toMatchObject({ code: 'model_error', status });
    expect(error.message).toContain(says);
  });

  it('a connection dropped before the first byte is retried', async () => {
    const { provider, requests } = await openai([{ drop: true }, ok], { retryBaseDelayMs: 1 });
    const onRetry = vi.fn();
    expect((await collect(provider, modelRequest({ onRetry }))).at(-1)).toMatchObject({ type: 'message' });
    expect(requests).toHaveLength(2);
    expect(onRetry).toHaveBeenCalledWith(
      1,
      expect.stringMatching(/^connection to http:\/\/127\.0\.0\.1:\d+\/v1 failed: .*; retrying in/),
    );
  });

  it('nothing listening: model_error after maxRetries + 1 attempts, saying that nothing listens at base_url and what to check', async () => {
    const { provider, close, origin } = await openai([ok], { maxRetries: 1, retryBaseDelayMs: 1 });
    await close();
    const onRetry = vi.fn();
    const { error } = await collectUntilError(provider, modelRequest({ onRetry }));
    expect(error.code).toBe('model_error');
    expect(error.message).toBe(
      `model request to ${origin}/v1 failed after 2 attempts; last: nothing listens at ${origin}/v1 ` +
        `(connect ECONNREFUSED ${origin.slice('http://'.length)}): ` +
        'start the model server, or check that base_url names the host and port it listens on',
    );
    expect(onRetry).toHaveBeenCalledWith(1, expect.stringMatching(/^nothing listens at .*; retrying in/));
  });

  it('nothing listening, retries off: says the request was not retried', async () => {
    const { provider, close } = await openai([ok], { maxRetries: 0 });
    await close();
    const { error } = await collectUntilError(provider);
    expect(error.code).toBe('model_error');
    expect(error.message).toMatch(
      /failed on its only attempt \(retries are off\); last: nothing listens at http:\/\/127\.0\.0\.1:\d+\/v1 \(connect ECONNREFUSED/,
    );
  });

  // A refused `localhost` tried on ::1 and 127.0.0.1: an AggregateError with an empty message,
  // its code ECONNREFUSED (as Node sets it) or none (as a wrapper may leave it).
  it.each([{ ownCode: 'ECONNREFUSED' }, { ownCode: undefined }])(
    'nothing listening at a dual-stack localhost (aggregate code $ownCode): names both refused addresses',
    async ({ ownCode }) => {
      const { origin, close } = await replayServer(ok);
      await close();
      const dualStack: typeof fetch = async (input, init) => {
        try {
          return await fetch(input, init);
        } catch (error) {
          const refused = (error as Error).cause as Error;
          const both = new AggregateError(
            [Object.assign(new Error('connect ECONNREFUSED ::1:11434'), { code: 'ECONNREFUSED' }), refused],
            '',
          );
          throw new TypeError('fetch failed', { cause: ownCode ? Object.assign(both, { code: ownCode }) : both });
        }
      };
      const provider = openAICompatibleModel({ baseURL: `${origin}/v1`, model: 'm', maxRetries: 0, fetch: dualStack });
      const { error } = await collectUntilError(provider);
      expect(error.message).toContain(
        `nothing listens at ${origin}/v1 (connect ECONNREFUSED ::1:11434; connect ECONNREFUSED ${origin.slice('http://'.length)}): start the model server`,
      );
    },
  );

  it('a request that never reached the server is not said to have been answered (a self-signed certificate)', async () => {
    const untrusted: typeof fetch = async () => {
      throw new TypeError('fetch failed', {
        cause: Object.assign(new Error('self-signed certificate'), { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' }),
      });
    };
    const provider = openAICompatibleModel({
      baseURL: 'https://127.0.0.1:1/v1',
      model: 'm',
      maxRetries: 0,
      fetch: untrusted,
    });
    const { error } = await collectUntilError(provider);
    expect(error.message).toContain('self-signed certificate');
    expect(error.message).not.toContain('without sending any event');
  });

  it('gives up after maxRetries + 1 answers of 500, keeping the status', async () => {
    const { provider, requests } = await openai([json(500, { error: { message: 'The server had an error' } })], {
      maxRetries: 2,
      retryBaseDelayMs: 1,
    });
    const onRetry = vi.fn();
    const { error } = await collectUntilError(provider, modelRequest({ onRetry }));
    expect(requests).toHaveLength(3);
    expect(onRetry.mock.calls.map(([attempt]) => attempt)).toEqual([1, 2]);
    expect(error).toMatchObject({ code: 'model_error', status: 500 });
    expect(error.message).toContain('after 3 attempts; last: HTTP 500: The server had an error');
  });

  it('an error before the first delta is retried; an error after it is not (the text already went out)', async () => {
    const overloadedFirst: Reply = {
      headers: { 'content-type': 'text/event-stream' },
      body: 'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n',
    };
    const server = await replayServer(overloadedFirst, replay('anthropic-overloaded-midstream.sse'));
    const provider = anthropicModel({ baseURL: `${server.origin}/v1`, apiKey: 'k', model: 'm', retryBaseDelayMs: 1 });
    const onRetry = vi.fn();
    const { chunks, error } = await collectUntilError(provider, modelRequest({ onRetry }));
    expect(onRetry.mock.calls).toEqual([[1, expect.stringMatching(/^HTTP 529: Overloaded; retrying in/)]]);
    expect(chunks).toEqual([{ type: 'delta', text: 'Let me think' }]);
    expect(error.message).toMatch(/broke off: in the stream: Overloaded/);
    expect(server.requests).toHaveLength(2);
  });
});

describe('how long it waits', () => {
  it('backs off exponentially on the engine clock, jittered by the injected source', async () => {
    const clock = new RecordingClock();
    const requestsAt = stamped(clock);
    const { provider, requests } = await openai(
      [json(503, { error: { message: 'busy' } }), json(502, '<html>502 Bad Gateway</html>'), ok],
      { retryBaseDelayMs: 1000, random: () => 0.5, fetch: requestsAt.fetch },
    );
    const onRetry = vi.fn();
    const done = collect(provider, modelRequest({ clock, onRetry }));

    // 1000 ms × 2^0 × (0.5 + 0.5 / 2) = 750 ms, then 1500 ms.
    await waitForRetries(onRetry, 1);
    expect(clock.delays).toEqual([750]);
    clock.increment(750);
    await waitForRetries(onRetry, 2);
    expect(clock.delays).toEqual([750, 1500]);
    clock.increment(1500);
    expect((await done).at(-1)).toMatchObject({ type: 'message' });
    // Each retry went out when its wait ended on the engine clock, not before.
    expect(requestsAt.sentAt).toEqual([0, 750, 2250]);
    expect(requests).toHaveLength(3);
    expect(onRetry.mock.calls).toEqual([
      [1, 'HTTP 503: busy; retrying in 0.8 s'],
      [2, 'HTTP 502: <html>502 Bad Gateway</html>; retrying in 1.5 s'],
    ]);
  });

  it('draws every jitter from the source it is given: a seeded source gives the same waits every run, within 50–100 % of the backoff', async () => {
    const waits = async () => {
      const { provider } = await openai([json(500, { error: { message: 'x' } })], {
        retryBaseDelayMs: 1000,
        maxRetries: 3,
        random: seededRandom(7),
      });
      const clock = new SimulatedClock();
      const onRetry = vi.fn();
      const failed = collectUntilError(provider, modelRequest({ clock, onRetry }));
      for (let n = 1; n <= 3; n++) {
        await waitForRetries(onRetry, n);
        clock.increment(10_000);
      }
      await failed;
      return onRetry.mock.calls.map(([, reason]) => Number(/retrying in ([\d.]+) s/.exec(String(reason))![1]) * 1000);
    };
    const first = await waits();
    expect(await waits()).toEqual(first);
    first.forEach((ms, n) => {
      expect(ms).toBeGreaterThanOrEqual(1000 * 2 ** n * 0.5 - 50);
      expect(ms).toBeLessThanOrEqual(1000 * 2 ** n);
    });
    expect(new Set(first.map((ms, n) => ms / 2 ** n)).size).toBeGreaterThan(1);
  });

  it.each<{ source: string; headers: Record<string, string>; waitMs: number }>([
    { source: 'Retry-After seconds', headers: { 'retry-after': '3' }, waitMs: 3000 },
    { source: 'retry-after-ms', headers: { 'retry-after-ms': '1250' }, waitMs: 1250 },
    {
      source: 'an exhausted x-ratelimit reset (OpenAI, Groq)',
      headers: {
        'x-ratelimit-remaining-tokens': '0',
        'x-ratelimit-reset-tokens': '2m0.5s',
        'x-ratelimit-remaining-requests': '99',
        'x-ratelimit-reset-requests': '6m0s',
      },
      waitMs: 120_500,
    },
  ])('waits what the server asks ($source) on the engine clock', async ({ headers, waitMs }) => {
    const clock = new RecordingClock();
    const requestsAt = stamped(clock);
    const { provider, requests } = await openai(
      [json(429, { error: { message: 'Rate limit reached' } }, headers), ok],
      { maxRetryWaitMs: 300_000, fetch: requestsAt.fetch },
    );
    const onRetry = vi.fn();
    const done = collect(provider, modelRequest({ clock, onRetry }));
    await waitForRetries(onRetry, 1);
    expect(clock.delays).toEqual([waitMs]);
    clock.increment(waitMs);
    expect((await done).at(-1)).toMatchObject({ type: 'message' });
    expect(requestsAt.sentAt).toEqual([0, waitMs]);
    expect(requests).toHaveLength(2);
  });

  it("waits Gemini's RetryInfo.retryDelay from a 429 body", async () => {
    const clock = new RecordingClock();
    const requestsAt = stamped(clock);
    const server = await replayServer(
      json(429, recording('google-429-retry-info.json').toString()),
      replay('google-text-signed.sse'),
    );
    const provider = googleModel({
      baseURL: `${server.origin}/v1beta`,
      apiKey: 'k',
      model: 'gemini-2.5-flash',
      fetch: requestsAt.fetch,
    });
    const onRetry = vi.fn();
    const done = collect(provider, modelRequest({ clock, onRetry }));
    await waitForRetries(onRetry, 1);
    expect(onRetry).toHaveBeenCalledWith(
      1,
      'HTTP 429: You exceeded your current quota, please check your plan.; retrying in 34.4 s',
    );
    expect(clock.delays).toEqual([34_400]);
    clock.increment(34_400);
    expect((await done).at(-1)).toMatchObject({ finishReason: 'stop' });
    expect(requestsAt.sentAt).toEqual([0, 34_400]);
    expect(server.requests).toHaveLength(2);
  });

  it.each<{ source: string; headers: Record<string, string>; says: string }>([
    {
      source: 'Retry-After',
      headers: { 'retry-after': '86400' },
      says: 'the server asks to wait 86400 s (Retry-After)',
    },
    {
      source: 'an HTTP date',
      headers: { 'retry-after': new Date(Date.now() + 3_600_000).toUTCString() },
      says: '(Retry-After)',
    },
    {
      source: "Anthropic's reset time",
      headers: {
        'anthropic-ratelimit-tokens-remaining': '0',
        'anthropic-ratelimit-tokens-reset': new Date(Date.now() + 600_000).toISOString(),
      },
      says: '(anthropic-ratelimit-tokens-reset)',
    },
    {
      source: 'x-ratelimit-reset-requests',
      headers: { 'x-ratelimit-remaining-requests': '0', 'x-ratelimit-reset-requests': '23h59m' },
      says: 'the server asks to wait 86340 s (x-ratelimit-reset-requests)',
    },
  ])(
    'a wait ($source) beyond max_retry_wait_seconds fails at once with rate_limited, naming it',
    async ({ headers, says }) => {
      const { provider, requests } = await openai([
        json(429, { error: { message: 'You exceeded your daily quota' } }, headers),
        ok,
      ]);
      const onRetry = vi.fn();
      const { error } = await collectUntilError(provider, modelRequest({ onRetry }));
      expect(requests).toHaveLength(1);
      expect(onRetry).not.toHaveBeenCalled();
      expect(error).toMatchObject({ code: 'rate_limited', status: 429 });
      expect(error.message).toContain('HTTP 429: You exceeded your daily quota');
      expect(error.message).toContain(says);
      expect(error.message).toContain('longer than max_retry_wait_seconds (60 s)');
    },
  );

  it("Gemini's retryDelay beyond the cap fails with rate_limited too", async () => {
    const server = await replayServer(json(429, recording('google-429-retry-info.json').toString()));
    const provider = googleModel({
      baseURL: `${server.origin}/v1beta`,
      apiKey: 'k',
      model: 'm',
      maxRetryWaitMs: 30_000,
    });
    const { error } = await collectUntilError(provider);
    expect(error).toMatchObject({ code: 'rate_limited', status: 429 });
    expect(error.message).toContain(
      'the server asks to wait 34.4 s (RetryInfo.retryDelay), longer than max_retry_wait_seconds (30 s)',
    );
  });
});

describe('the run around it', () => {
  it("no retry starts after the run's deadline: the turn fails at once with the cause", async () => {
    const clock = new SimulatedClock();
    const { provider, requests } = await openai([
      json(429, { error: { message: 'Rate limit reached' } }, { 'retry-after': '30' }),
      ok,
    ]);
    const onRetry = vi.fn();
    const { error } = await collectUntilError(
      provider,
      modelRequest({ clock, onRetry, context: { runId: 'r', sessionId: 's', turn: 0, input: '', deadline: 10_000 } }),
    );
    expect(requests).toHaveLength(1);
    expect(onRetry).not.toHaveBeenCalled();
    expect(error).toMatchObject({ code: 'rate_limited', status: 429 });
    expect(error.message).toContain(
      "HTTP 429: Rate limit reached; the retry in 30 s would start after the run's deadline",
    );
  });

  it('rejects with code aborted while waiting to retry', async () => {
    const clock = new SimulatedClock();
    const { provider, requests } = await openai([
      json(503, { error: { message: 'slow down' } }, { 'retry-after': '30' }),
    ]);
    const controller = new AbortController();
    const onRetry = vi.fn();
    const failed = collectUntilError(provider, modelRequest({ clock, signal: controller.signal, onRetry }));
    // Reported, then waiting on the clock (which never moves): the abort comes during the wait.
    await waitForRetries(onRetry, 1);
    controller.abort();
    const { error } = await failed;
    expect(error.code).toBe('aborted');
    expect(requests).toHaveLength(1);
  });
});
