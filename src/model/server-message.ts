/*
 * The server's own words from an error body, whatever shape it came in: OpenAI's
 * `{error: {message}}`, Ollama's `{error: "..."}`, vLLM's `{object: "error", message}`,
 * Mistral's `{message: {detail: [{loc, msg}]}}`, FastAPI's `{detail}`, Google's error array.
 */
import { TypeValidationError } from '@ai-sdk/provider';
import { z } from 'zod';

const detailItem = z.object({ loc: z.array(z.union([z.string(), z.number()])).optional(), msg: z.string() });
const detailList = z
  .array(detailItem)
  .transform((items) => items.map((d) => (d.loc ? `${d.loc.join('.')}: ${d.msg}` : d.msg)).join('; '));

const errorShape: z.ZodType<string, unknown> = z.union([
  z.object({ error: z.object({ message: z.string() }) }).transform((e) => e.error.message),
  z.object({ error: z.string() }).transform((e) => e.error),
  z.object({ message: z.string() }).transform((e) => e.message),
  z.object({ message: z.object({ detail: detailList }) }).transform((e) => e.message.detail),
  z.object({ detail: z.union([z.string(), detailList]) }).transform((e) => e.detail),
  z.tuple([z.object({ error: z.object({ message: z.string() }) })], z.unknown()).transform(([e]) => e.error.message),
]);

export function serverMessageOf(value: unknown): string | undefined {
  const parsed = errorShape.safeParse(value);
  return parsed.success ? parsed.data : undefined;
}

/** The message in a body's text, or the text itself (shortened) when it is not a known shape. */
export function serverMessageOfText(text: string): string | undefined {
  const trimmed = text.trim();
  if (trimmed === '') return undefined;
  return serverMessageOf(parseJson(trimmed)) ?? truncate(trimmed);
}

export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

export function truncate(text: string, max = 500): string {
  return text.length > max ? `${text.slice(0, max)}...` : text;
}

/** An HTTP-like status inside an error value (`{code: 502}`, `{error: {code: 400}}`), kept for the run's error. */
export function statusOf(value: unknown): number | undefined {
  if (TypeValidationError.isInstance(value)) return statusOf(value.value);
  const candidates: unknown[] = [];
  if (typeof value === 'object' && value !== null) {
    const record = value as { code?: unknown; status?: unknown; error?: { code?: unknown } };
    candidates.push(record.error?.code, record.code, record.status);
  }
  return candidates.find((c): c is number => typeof c === 'number' && c >= 400 && c < 600);
}
