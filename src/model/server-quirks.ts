/*
 * What an OpenAI-compatible server needs beyond the common dialect, by host. Each row is a
 * refusal seen in the field: Mistral answers 422 to `stream_options` (and sends usage
 * anyway); Gemini's OpenAI endpoint refuses tool schemas outside its OpenAPI subset; DeepSeek's
 * thinking mode refuses a tool loop whose assistant turns lost their `reasoning_content`.
 * api.openai.com gets OpenAI's own package, which knows its reasoning models' parameters.
 */
import type { SchemaDialect } from './tool-schema.js';

export interface ServerQuirks {
  package: 'openai' | 'openai-compatible';
  /** Sends `stream_options: {include_usage: true}`. */
  includeUsage: boolean;
  replayReasoning: boolean;
  dialect: SchemaDialect;
}

const COMMON: ServerQuirks = {
  package: 'openai-compatible',
  includeUsage: true,
  replayReasoning: false,
  dialect: 'json-schema',
};

const BY_HOST: Record<string, Partial<ServerQuirks>> = {
  'api.openai.com': { package: 'openai' },
  'api.mistral.ai': { includeUsage: false },
  'generativelanguage.googleapis.com': { dialect: 'gemini' },
  'api.deepseek.com': { replayReasoning: true },
};

export function quirksOf(baseURL: string): ServerQuirks {
  let host = '';
  try {
    host = new URL(baseURL).hostname;
  } catch {
    // An unparsable URL fails on the first request, with the package's own message.
  }
  return { ...COMMON, ...BY_HOST[host] };
}
