/*
 * Server-sent events (the `text/event-stream` format streaming HTTP APIs answer with): turns a
 * byte stream into the data of each event, whatever way the bytes were split into chunks.
 */

const lineBreak = /\r\n|\r|\n/;

/**
 * Yields the data of each event (its `data:` lines joined by "\n"); comments and other fields
 * are skipped. An event still open when the stream ends is yielded too: lenient servers omit
 * the last blank line.
 */
export async function* serverSentEventData(bytes: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffer = '';
  let data: string[] = [];

  // Returns the event the line completes, if any.
  const takeLine = (line: string): string | undefined => {
    if (line === '') {
      const event = data.length > 0 ? data.join('\n') : undefined;
      data = [];
      return event;
    }
    if (line.startsWith(':')) return undefined;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    if (field !== 'data') return undefined;
    const value = colon < 0 ? '' : line.slice(colon + 1);
    data.push(value.startsWith(' ') ? value.slice(1) : value);
    return undefined;
  };

  function* drain(final: boolean): Generator<string> {
    for (;;) {
      const match = lineBreak.exec(buffer);
      if (!match) break;
      // A trailing "\r" may be the first half of a "\r\n" split across chunks.
      if (match[0] === '\r' && match.index === buffer.length - 1 && !final) break;
      const line = buffer.slice(0, match.index);
      buffer = buffer.slice(match.index + match[0].length);
      const event = takeLine(line);
      if (event !== undefined) yield event;
    }
  }

  for await (const chunk of bytes) {
    buffer += decoder.decode(chunk, { stream: true });
    yield* drain(false);
  }
  buffer += decoder.decode();
  yield* drain(true);
  if (buffer !== '') {
    const event = takeLine(buffer);
    buffer = '';
    if (event !== undefined) yield event;
  }
  if (data.length > 0) yield data.join('\n');
}
