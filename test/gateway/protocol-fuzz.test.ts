/*
 * Whatever a client sends, the gateway answers or closes cleanly, and keeps serving:
 * random bytes and strings, JSON that is not a request, requests of the wrong shape, wrong
 * param types, unknown methods, frames over maxPayload. After every bad frame a valid
 * request on the same connection (when it stayed open) and on a fresh one still works.
 * (Notifications, which are never answered, and batches: json-rpc-batches.test.ts.)
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { MethodParamsSchemas, RpcErrorCode } from '../../src/gateway/index.js';
import { closeOf, gatewayFixture, request, type GatewayHarness } from './fixtures.js';
import { until } from '../support/eventually.js';

const harness = gatewayFixture();
const METHODS = Object.keys(MethodParamsSchemas);
const ERROR_CODES = new Set<number>(Object.values(RpcErrorCode));

interface Exchange {
  /** The answers that arrived before the probe's (notifications left out). */
  answers: Record<string, unknown>[];
  /** Set when the connection closed instead. */
  closeCode?: number;
}

/**
 * Sends a frame, then a probe (engine.snapshot with a fresh id). Validation errors are sent
 * as soon as a frame is read, so the bad frame's answer always precedes the probe's.
 */
class Prober {
  private ws!: WebSocket;
  private frames: Record<string, unknown>[] = [];
  private closedWith: number | undefined;
  private probes = 0;
  reconnects = 0;

  constructor(private readonly h: GatewayHarness) {}

  async open(): Promise<void> {
    this.ws = await this.h.raw();
    this.frames = [];
    this.closedWith = undefined;
    this.ws.on('message', (data) => this.frames.push(JSON.parse(String(data)) as Record<string, unknown>));
    this.ws.once('close', (code) => (this.closedWith = code));
  }

  async exchange(frame: string | Uint8Array): Promise<Exchange> {
    if (this.ws.readyState !== WebSocket.OPEN) {
      this.reconnects += 1;
      await this.open();
    }
    this.frames = [];
    const probeId = `probe-${++this.probes}`;
    this.ws.send(frame, { binary: typeof frame !== 'string' });
    this.ws.send(JSON.stringify({ jsonrpc: '2.0', id: probeId, method: 'engine.snapshot' }));
    await until(
      () => this.closedWith !== undefined || this.frames.some((f) => f['id'] === probeId),
      `the answer to ${probeId}`,
    );
    const answers = this.frames.filter((f) => f['id'] !== probeId && !('method' in f));
    if (this.closedWith !== undefined) return { answers, closeCode: this.closedWith };
    const probe = this.frames.find((f) => f['id'] === probeId)!;
    expect(probe['result']).toMatchObject({ global: expect.any(Object) });
    return { answers };
  }
}

/** One answer, an error with a JSON-RPC code, and (when given) one of the expected codes. */
function expectOneError(exchange: Exchange, codes?: number[]): void {
  expect(exchange.closeCode).toBeUndefined();
  expect(exchange.answers).toHaveLength(1);
  const [answer] = exchange.answers;
  expect(answer).toMatchObject({ jsonrpc: '2.0', error: { code: expect.any(Number), message: expect.any(String) } });
  const code = (answer!['error'] as { code: number }).code;
  expect(ERROR_CODES.has(code)).toBe(true);
  if (codes) expect(codes).toContain(code);
}

const validBase = { jsonrpc: '2.0', id: 1, method: 'engine.snapshot', params: {} };
const notAnId = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.object({ maxDepth: 1 }),
);
const notParams = fc.oneof(fc.string(), fc.integer(), fc.boolean(), fc.constant(null));

/** Requests whose envelope is wrong: each is answered -32600. */
const wrongShapes = fc.oneof(
  fc.constant({ ...validBase, jsonrpc: undefined }),
  fc
    .string()
    .filter((v) => v !== '2.0')
    .map((jsonrpc) => ({ ...validBase, jsonrpc })),
  notAnId.map((id) => ({ ...validBase, id })),
  fc
    .oneof(fc.integer(), fc.constant(null), fc.constant(''), fc.object({ maxDepth: 1 }))
    .map((method) => ({ ...validBase, method })),
  notParams.map((params) => ({ ...validBase, params })),
  fc
    .string({ minLength: 1 })
    .filter((k) => !['jsonrpc', 'id', 'method', 'params'].includes(k))
    .map((k) => ({ ...validBase, [k]: 1 })),
  fc.constant([]),
);

const wrongString = fc.oneof(
  fc.integer(),
  fc.boolean(),
  fc.constant(''),
  fc.constant(null),
  fc.array(fc.string(), { maxLength: 2 }),
);

/** Known methods with params no schema accepts: each is answered -32602. */
const wrongParams: fc.Arbitrary<{ method: string; params: unknown }> = fc.oneof(
  fc
    .constantFrom(...METHODS)
    .chain((method) => fc.array(fc.anything(), { maxLength: 3 }).map((params) => ({ method, params }))),
  fc.record({ sessionId: wrongString, input: fc.anything() }).map((params) => ({ method: 'run.submit', params })),
  fc
    .record({ sessionId: fc.string({ minLength: 1 }), input: fc.oneof(fc.integer(), fc.constant(null)) })
    .map((params) => ({ method: 'run.submit', params })),
  fc
    .record({
      sessionId: fc.constant('s'),
      input: fc.constant('x'),
      timeoutMs: fc.oneof(fc.constant(-1), fc.constant(1.5), fc.string()),
    })
    .map((params) => ({ method: 'run.submit', params })),
  fc
    .constantFrom('run.wait', 'run.get', 'run.history', 'run.cancel')
    .chain((method) => wrongString.map((runId) => ({ method, params: { runId } }))),
  wrongString.map((sessionId) => ({ method: 'session.stop', params: { sessionId } })),
  fc
    .oneof(fc.constant(-1), fc.constant(0.5), fc.string())
    .map((fromSeq) => ({ method: 'events.subscribe', params: { runId: 'r', fromSeq } })),
  fc.constant({ method: 'events.subscribe', params: { runId: 'r', sessionId: 's' } }),
  fc.constant({ method: 'events.subscribe', params: { fromSeq: 0 } }),
  fc.constant({ method: 'events.unsubscribe', params: {} }),
  fc
    .string()
    .filter((d) => !['allow_once', 'allow_session', 'deny'].includes(d))
    .map((decision) => ({ method: 'approval.respond', params: { approvalId: 'a', decision } })),
  fc.string({ minLength: 1 }).map((key) => ({ method: 'engine.snapshot', params: { [key]: 1 } })),
  fc.string({ minLength: 1 }).map((key) => ({ method: 'inspect.subscribe', params: { [key]: true } })),
  fc
    .constantFrom(
      { execution: { max_runs_global: 0 } },
      { execution: { nope: 1 } },
      { no_such_section: {} },
      { execution: 'fast' },
    )
    .map((params) => ({ method: 'config.update', params })),
);

describe('every bad frame gets an error answer, and the connection goes on', () => {
  it('random bytes as binary frames: -32600', async () => {
    const prober = new Prober(await harness());
    await prober.open();
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 512 }), async (bytes) =>
        expectOneError(await prober.exchange(bytes), [RpcErrorCode.InvalidRequest]),
      ),
      { numRuns: 60 },
    );
  });

  it('random text: -32700 when it is not JSON, -32600 when it is JSON but not a request', async () => {
    const prober = new Prober(await harness());
    await prober.open();
    await fc.assert(
      // Text that happens to be a JSON array is a batch (json-rpc-batches.test.ts).
      fc.asyncProperty(
        fc
          .oneof(fc.string({ unit: 'grapheme', maxLength: 200 }), fc.string({ unit: 'binary', maxLength: 200 }))
          .filter((text) => !isJsonArray(text)),
        async (text) => {
          const exchange = await prober.exchange(text);
          // A lone surrogate is not UTF-8 once encoded: ws closes with 1007, cleanly.
          if (exchange.closeCode !== undefined) expect(exchange.closeCode).toBe(1007);
          else expectOneError(exchange, [RpcErrorCode.ParseError, RpcErrorCode.InvalidRequest]);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('invalid JSON: -32700', async () => {
    const prober = new Prober(await harness());
    await prober.open();
    const broken = fc.oneof(
      fc
        .json()
        .map((json) => json.slice(0, -1))
        .filter((text) => !isJson(text)),
      fc.constantFrom('{', '{"jsonrpc":"2.0",', "{'a':1}", 'NaN', '{"a":undefined}', '[1,]', ''),
    );
    await fc.assert(
      fc.asyncProperty(broken, async (text) => expectOneError(await prober.exchange(text), [RpcErrorCode.ParseError])),
      { numRuns: 80 },
    );
  });

  it('JSON values that are not requests (nor batches): -32600', async () => {
    const prober = new Prober(await harness());
    await prober.open();
    const notBatches = fc.jsonValue({ maxDepth: 3 }).filter((value) => !Array.isArray(value));
    await fc.assert(
      fc.asyncProperty(notBatches, async (value) =>
        expectOneError(await prober.exchange(JSON.stringify(value)), [RpcErrorCode.InvalidRequest]),
      ),
      { numRuns: 100 },
    );
  });

  it('requests of the wrong shape (no jsonrpc, bad ids, bad params, an empty batch): -32600', async () => {
    const prober = new Prober(await harness());
    await prober.open();
    await fc.assert(
      fc.asyncProperty(wrongShapes, async (frame) =>
        expectOneError(await prober.exchange(JSON.stringify(frame)), [RpcErrorCode.InvalidRequest]),
      ),
      { numRuns: 120 },
    );
  });

  it('an id that can be read is echoed on an invalid request', async () => {
    const { raw } = await harness();
    const ws = await raw();
    const answer = await request(ws, 'engine.snapshot', 'not params', 'keep-me');
    expect(answer).toMatchObject({ id: 'keep-me', error: { code: RpcErrorCode.InvalidRequest } });
  });

  it('unknown methods: -32601 with the request id', async () => {
    const prober = new Prober(await harness());
    await prober.open();
    const unknown = fc.string({ minLength: 1, maxLength: 100 }).filter((m) => !METHODS.includes(m));
    await fc.assert(
      fc.asyncProperty(unknown, fc.oneof(fc.integer(), fc.string({ maxLength: 20 })), async (method, id) => {
        const exchange = await prober.exchange(JSON.stringify({ jsonrpc: '2.0', id, method }));
        expectOneError(exchange, [RpcErrorCode.MethodNotFound]);
        expect(exchange.answers[0]!['id']).toBe(id);
      }),
      { numRuns: 80 },
    );
  });

  it('known methods with params of the wrong types: -32602 with the issues', async () => {
    const prober = new Prober(await harness());
    await prober.open();
    await fc.assert(
      fc.asyncProperty(wrongParams, async ({ method, params }) => {
        const exchange = await prober.exchange(JSON.stringify({ jsonrpc: '2.0', id: 7, method, params }));
        expectOneError(exchange, [RpcErrorCode.InvalidParams]);
        expect(exchange.answers[0]).toMatchObject({ id: 7, error: { data: { issues: expect.any(Array) } } });
      }),
      { numRuns: 150 },
    );
    expect(prober.reconnects).toBe(0);
  });

  it('frames over maxPayload close that connection with 1009; the server serves others', async () => {
    const h = await harness({ gateway: { maxPayloadBytes: 4096 } });
    const bystander = await h.raw();
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 4097, max: 64 * 1024 }), fc.boolean(), async (size, binary) => {
        const ws = await h.raw();
        const closed = closeOf(ws);
        ws.send(
          binary
            ? Buffer.alloc(size, 1)
            : JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'engine.snapshot', params: { pad: 'x'.repeat(size) } }),
        );
        expect((await closed).code).toBe(1009);
        const fresh = await h.raw();
        expect((await request(fresh, 'engine.snapshot'))['result']).toBeDefined();
        fresh.close();
      }),
      { numRuns: 10 },
    );
    expect((await request(bystander, 'engine.snapshot'))['result']).toBeDefined();
  });

  it('after all of it, a fresh connection and the client work', async () => {
    const h = await harness();
    const prober = new Prober(h);
    await prober.open();
    for (const frame of ['', '{', '[]', '{"jsonrpc":"2.0","id":1,"method":"nope"}', new Uint8Array([0, 1, 2])])
      await prober.exchange(frame);
    const client = await h.client();
    const submitted = await client.submit({ sessionId: 'after-fuzz', input: 'still here?' });
    expect(await client.wait(submitted.runId)).toMatchObject({ state: 'completed' });
  });
});

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

function isJsonArray(text: string): boolean {
  return isJson(text) && Array.isArray(JSON.parse(text));
}

describe('params reach the method schema exactly as sent', () => {
  it.each(['engine.snapshot', 'inspect.subscribe', 'run.wait', 'run.submit'])(
    'a "__proto__" key in the params of %s is an unknown key: -32602',
    async (method) => {
      const { raw } = await harness();
      const ws = await raw();
      const frame = `{"jsonrpc":"2.0","id":"p","method":"${method}","params":{"runId":"r","sessionId":"s","input":"x","__proto__":{"polluted":true}}}`;
      const answer = await new Promise<Record<string, unknown>>((resolve) => {
        ws.once('message', (data) => resolve(JSON.parse(String(data)) as Record<string, unknown>));
        ws.send(frame);
      });
      expect(answer).toMatchObject({ id: 'p', error: { code: RpcErrorCode.InvalidParams } });
      expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
    },
  );
});
