/*
 * What the server actually sent, read beside the provider package's own parser, for the error
 * shapes that package cannot see: llama.cpp's nonstandard `error:` field (an SSE parser must
 * ignore unknown fields), an `event: error` whose data is not the package's error schema, and
 * a 200 whose body is plain JSON rather than an event stream. The bytes pass through as they
 * came; the witness only remembers.
 */
import { createParser, type EventSourceParser } from 'eventsource-parser';
import { parseJson, serverMessageOfText, statusOf } from './server-message.js';

const HEAD_CHARS = 4096;

export class StreamWitness {
  private readonly errors: string[] = [];
  private events = 0;
  private head = '';
  private readonly decoder = new TextDecoder();
  private readonly parser: EventSourceParser = createParser({
    onEvent: (event) => {
      this.events++;
      if (event.event === 'error') this.errors.push(event.data);
    },
    onError: (error) => {
      if (error.type === 'unknown-field' && error.field === 'error' && error.value !== undefined) this.errors.push(error.value);
    },
  });

  /** A fetch whose successful response bodies this witness reads along. */
  wrap(fetchImpl: typeof fetch): typeof fetch {
    return async (input, init) => {
      const response = await fetchImpl(input, init);
      if (!response.ok || !response.body) return response;
      const tap = new TransformStream<Uint8Array, Uint8Array>({
        transform: (chunk, controller) => {
          this.see(chunk);
          controller.enqueue(chunk);
        },
      });
      return new Response(response.body.pipeThrough(tap), { status: response.status, statusText: response.statusText, headers: response.headers });
    };
  }

  /** The server's own error (and the status it names), if the body carried one the provider package could not read. */
  serverMessage(): { message: string; status?: number } | undefined {
    const bodies = [...this.errors];
    // Not an event stream: the whole (start of the) body is the answer.
    if (this.events === 0 && this.head.trim() !== '') bodies.push(this.head);
    for (const body of bodies) {
      const message = serverMessageOfText(body);
      const status = statusOf(parseJson(body.trim()));
      if (message) return { message, ...(status !== undefined ? { status } : {}) };
    }
    return undefined;
  }

  /** Whether the body held no event at all. */
  get empty(): boolean {
    return this.events === 0 && this.head.trim() === '';
  }

  private see(chunk: Uint8Array): void {
    const text = this.decoder.decode(chunk, { stream: true });
    if (this.head.length < HEAD_CHARS) this.head += text.slice(0, HEAD_CHARS - this.head.length);
    this.parser.feed(text);
  }
}
