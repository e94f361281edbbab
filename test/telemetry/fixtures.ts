/*
 * What the telemetry suites share: a model that reports token usage and follows a script by
 * input, two small tools, and a reader of the Prometheus text format (one sample per line:
 * `name{label="value",...} number`).
 */
import { z } from 'zod';
import type { ModelProvider, ModelToolCall } from '../../src/model/index.js';
import { defineTool, ToolError } from '../../src/tools/index.js';

export const USAGE = { inputTokens: 11, outputTokens: 5, cachedTokens: 3 };

export type Turn = { text: string } | { toolCalls: readonly Omit<ModelToolCall, 'id'>[] } | { error: string };

/** Answers by the run's input at turn 0, then "done"; every answer reports USAGE. */
export function meteredModel(firstTurn: (input: string) => Turn): ModelProvider {
  return {
    async *complete(request) {
      const turn: Turn = (request.context?.turn ?? 0) > 0 ? { text: 'done' } : firstTurn(request.context?.input ?? '');
      if ('error' in turn) throw Object.assign(new Error(turn.error), { code: 'model_error' });
      const toolCalls = 'toolCalls' in turn ? turn.toolCalls.map((call, i) => ({ ...call, id: `call_${i}` })) : [];
      yield {
        type: 'message',
        text: 'text' in turn ? turn.text : '',
        toolCalls,
        finishReason: toolCalls.length > 0 ? 'tool_calls' : 'stop',
        usage: USAGE,
      };
    },
  };
}

/** A read-only tool (calls of it run together) and one that always fails with `lookup_failed`. */
export const lookupTool = defineTool({
  name: 'lookup',
  description: 'Looks a key up.',
  input: z.object({ key: z.string() }).strict(),
  readOnly: true,
  execute: async ({ key }) => `value of ${key}`,
});

export const brokenTool = defineTool({
  name: 'broken',
  description: 'Always fails.',
  input: z.object({}).strict(),
  readOnly: true,
  execute: async () => {
    throw new ToolError('lookup_failed', 'the lookup service is down');
  },
});

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export function parsePrometheusText(text: string): Sample[] {
  return text
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
      if (!match) throw new Error(`not a sample line: ${line}`);
      const labels = Object.fromEntries(
        [...(match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1]!, m[2]!]),
      );
      return { name: match[1]!, labels, value: Number(match[3]) };
    });
}

/** The samples of one metric as "label=value,label=value" → value (labels in name order). */
export function series(samples: Sample[], name: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const sample of samples.filter((s) => s.name === name)) {
    const key = Object.keys(sample.labels)
      .sort()
      .map((label) => `${label}=${sample.labels[label]}`)
      .join(',');
    out[key] = sample.value;
  }
  return out;
}

/** Counts of `keys`, as series() spells them. */
export function tally(keys: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const key of keys) out[key] = (out[key] ?? 0) + 1;
  return out;
}
