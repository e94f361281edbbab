/*
 * What the server actually sent, read beside the provider package's own parser, for what that
 * parser cannot see: llama.cpp's nonstandard `error:` field (an SSE parser must ignore unknown
 * fields), an `event: error` whose data is not the package's error schema, a 200 whose body is
 * plain JSON rather than an event stream, an error object written between events without
 * `data:` framing (Gemini), the `[DONE]` that says the server finished, and Azure's content
 * filter verdicts (the asynchronous filter sends them after the finish). The bytes pass
 * through as they came; the witness only remembers.
 */
import { createParser, type EventSourceParser } from 'eventsource-parser';
import { parseJson, serverMessageOf, serverMessageOfText, statusOf, truncate } from './server-message.js';

const HEAD_CHARS = 4096;
const STRAY_CHARS = 16_384;

export class StreamWitness {
  private readonly errors: string[] = [];
  private events = 0;
  private head = '';
  /** Lines that are no SSE field at all: an error object written into the stream unframed. */
  private stray = '';
  private answered = false;
  private done = false;
  private annotated = false;
  private readonly flaggedCategories = new Set<string>();
  private readonly decoder = new TextDecoder();
  private readonly parser: EventSourceParser = createParser({
    onEvent: (event) => {
      this.events++;
      if (event.event === 'error') this.errors.push(event.data);
      else if (event.data.trim() === '[DONE]') this.done = true;
      else this.readFilterVerdict(event.data);
    },
    onError: (error) => {
      if (error.type !== 'unknown-field') return;
      if (error.field === 'error' && error.value !== undefined) this.errors.push(error.value);
      else if (error.line !== undefined && this.stray.length < STRAY_CHARS) this.stray += `${error.line}\n`;
    },
  });

  /** A fetch whose successful response bodies this witness reads along. */
  wrap(fetchImpl: typeof fetch): typeof fetch {
    return async (input, init) => {
      const response = await fetchImpl(input, init);
      this.answered = true;
      if (!response.ok || !response.body) return response;
      const tap = new TransformStream<Uint8Array, Uint8Array>({
        transform: (chunk, controller) => {
          this.see(chunk);
          controller.enqueue(chunk);
        },
        flush: () => this.end(),
      });
      return new Response(response.body.pipeThrough(tap), {
        status: response.status,
        statusText: response.statusText,
        headers: response.headers,
      });
    };
  }

  /** The server's own error (and the status it names), if the body carried one the provider package could not read. */
  serverMessage(): { message: string; status?: number } | undefined {
    const bodies = [...this.errors];
    const stray = this.strayError();
    if (stray) bodies.push(stray);
    // Not an event stream: the whole (start of the) body is the answer.
    if (this.events === 0 && this.head.trim() !== '') bodies.push(this.head);
    for (const body of bodies) {
      const message = serverMessageOfText(body);
      const status = statusOf(parseJson(body.trim()));
      if (message) return { message, ...(status !== undefined ? { status } : {}) };
    }
    return undefined;
  }

  /** Whether the server answered at all (a response with headers), before or without any body. */
  get reached(): boolean {
    return this.answered;
  }

  /** Whether the body held no event at all. */
  get empty(): boolean {
    return this.events === 0 && this.head.trim() === '';
  }

  /** Whether the server said it was done (`data: [DONE]`). */
  get saidDone(): boolean {
    return this.done;
  }

  /** Whether a content filter annotated the completion: its verdict may come after the finish. */
  get filterAnnotates(): boolean {
    return this.annotated;
  }

  /** The categories a content filter flagged in the completion (`content_filter_results.<category>.filtered: true`). */
  get flagged(): string[] {
    return [...this.flaggedCategories];
  }

  private see(chunk: Uint8Array): void {
    const text = this.decoder.decode(chunk, { stream: true });
    if (this.head.length < HEAD_CHARS) this.head += text.slice(0, HEAD_CHARS - this.head.length);
    this.parser.feed(text);
  }

  private end(): void {
    const rest = this.decoder.decode();
    if (rest !== '') this.parser.feed(rest);
    this.parser.reset({ consume: true });
  }

  /**
   * Unframed text that is an error: a JSON error object (Gemini pretty-prints one between
   * events), or, cut before its end, text that names an error.
   */
  private strayError(): string | undefined {
    const text = this.stray.trim();
    if (text === '') return undefined;
    const parsed = parseJson(text);
    if (parsed !== undefined) return serverMessageOf(parsed) !== undefined ? text : undefined;
    return /\berror\b/i.test(text) ? truncate(text) : undefined;
  }

  private readFilterVerdict(data: string): void {
    if (!data.includes('"content_filter_results"')) return;
    const choices = (parseJson(data) as { choices?: unknown } | undefined)?.choices;
    if (!Array.isArray(choices)) return;
    for (const choice of choices as { content_filter_results?: unknown }[]) {
      const results = choice?.content_filter_results;
      if (!results || typeof results !== 'object') continue;
      this.annotated = true;
      for (const [category, verdict] of Object.entries(results)) {
        if ((verdict as { filtered?: unknown } | null)?.filtered === true) this.flaggedCategories.add(category);
      }
    }
  }
}
