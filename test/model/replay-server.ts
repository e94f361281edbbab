/*
 * A model server on 127.0.0.1 that answers with recorded bytes, written as they were recorded
 * or cut at chosen byte offsets, and remembers every request it received.
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterEach } from 'vitest';
import type { ModelChunk, ModelProvider, ModelRequest } from '../../src/model/types.js';

export interface Received {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The request body as the provider sent it: JSON of any shape. */
  body: Record<string, unknown>;
}

export interface Reply {
  status?: number;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Byte offsets at which the body is cut into separate writes, a few ms apart. */
  cuts?: number[];
  /** Closes the connection without answering. */
  drop?: boolean;
  /** Leaves the response open after the body (a server that never finishes). */
  hang?: boolean;
  /** Closes the connection after the body without ending the response (a connection cut mid-stream). */
  cutConnection?: boolean;
}

export type Answer = Reply | ((request: Received, index: number) => Reply | Promise<Reply>);

const servers: Server[] = [];

afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

const RECORDINGS = fileURLToPath(new URL('./recordings/', import.meta.url));

/** A recorded body, byte for byte. */
export function recording(file: string): Buffer {
  return readFileSync(RECORDINGS + file);
}

/** Answers with a recording, as the server that produced it labels it. */
export function replay(file: string, extra: Omit<Reply, 'body'> = {}): Reply {
  const type = file.endsWith('.json') ? 'application/json' : 'text/event-stream';
  return { ...extra, headers: { 'content-type': type, ...extra.headers }, body: recording(file) };
}

/** Starts a server whose n-th request gets answers[n] (the last one answers the rest). */
export async function replayServer(...answers: Answer[]) {
  const requests: Received[] = [];
  const server = createServer((req, res) => {
    const pieces: Buffer[] = [];
    req.on('data', (piece: Buffer) => pieces.push(piece));
    req.on('end', () => {
      const text = Buffer.concat(pieces).toString('utf8');
      const received: Received = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
      };
      const index = requests.push(received) - 1;
      const answer = answers[Math.min(index, answers.length - 1)]!;
      void Promise.resolve(typeof answer === 'function' ? answer(received, index) : answer).then((reply) =>
        send(res, reply),
      );
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const origin = `http://127.0.0.1:${port}`;
  return {
    origin,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function send(res: ServerResponse, reply: Reply): Promise<void> {
  if (reply.drop) {
    res.socket?.destroy();
    return;
  }
  res.writeHead(reply.status ?? 200, reply.headers ?? { 'content-type': 'text/event-stream' });
  const body = Buffer.from(reply.body ?? '');
  let from = 0;
  for (const cut of reply.cuts ?? []) {
    res.write(body.subarray(from, cut));
    from = cut;
    await new Promise((resolve) => setTimeout(resolve, 3));
  }
  if (reply.hang) res.write(body.subarray(from));
  else if (reply.cutConnection) res.write(body.subarray(from), () => res.socket?.destroy());
  else res.end(body.subarray(from));
}

/**
 * A fetch that hands the provider each response body in pieces of `size` bytes, so its
 * parser meets every boundary: mid-line, mid-UTF-8 character, between CR and LF.
 */
export function rechunkingFetch(size: number): typeof fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    if (!response.body) return response;
    // Piece by piece as the bytes arrive, so a connection cut mid-body fails where it was cut.
    const pieces = new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        for (let offset = 0; offset < chunk.length; offset += size)
          controller.enqueue(chunk.slice(offset, offset + size));
      },
    });
    return new Response(response.body.pipeThrough(pieces), {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}

/** A fetch that sends requests for `from` (an official endpoint) to the local server instead. */
export function redirectingFetch(from: string, to: string, inner: typeof fetch = fetch): typeof fetch {
  return (input, init) => inner(String(input instanceof Request ? input.url : input).replace(from, to), init);
}

/** Offsets worth cutting a body at: inside the first multi-byte character, between the first CR and LF, mid first line. */
export function awkwardCuts(body: Buffer): number[] {
  const cuts = new Set<number>();
  const firstLineEnd = body.indexOf(10);
  if (firstLineEnd > 2) cuts.add(Math.floor(firstLineEnd / 2));
  const multiByte = body.findIndex((byte) => byte >= 0xc0);
  if (multiByte >= 0) cuts.add(multiByte + 1);
  const cr = body.indexOf('\r\n');
  if (cr >= 0) cuts.add(cr + 1);
  return [...cuts].filter((c) => c > 0 && c < body.length).sort((a, b) => a - b);
}

export function modelRequest(overrides: Partial<ModelRequest> = {}): ModelRequest {
  return { messages: [{ role: 'user', content: 'hi' }], tools: [], signal: new AbortController().signal, ...overrides };
}

export async function collect(provider: ModelProvider, request: ModelRequest = modelRequest()): Promise<ModelChunk[]> {
  const chunks: ModelChunk[] = [];
  for await (const chunk of provider.complete(request)) chunks.push(chunk);
  return chunks;
}

/** Every chunk until the provider threw, and what it threw. */
export async function collectUntilError(provider: ModelProvider, request: ModelRequest = modelRequest()) {
  const chunks: ModelChunk[] = [];
  try {
    for await (const chunk of provider.complete(request)) chunks.push(chunk);
  } catch (error) {
    return { chunks, error: error as Error & { code?: string; status?: number } };
  }
  throw new Error(`expected the provider to fail; it answered ${JSON.stringify(chunks.at(-1))}`);
}

/** A seeded jitter source (mulberry32), so backoff waits are the same on every run. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
