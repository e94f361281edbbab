/*
 * A ModelProvider on an AI SDK provider package, used at the provider level: one `doStream`
 * call per turn, tools declared without `execute` (the engine runs them in its own loop).
 * The package frames and parses the stream; this file keeps what is ours: the conversation
 * sent in a form strict servers accept, every failure in the server's own words, and retries
 * on the engine clock that report themselves and never outlive the run's deadline.
 */
import type { LanguageModelV3, LanguageModelV3CallOptions, LanguageModelV3FunctionTool } from '@ai-sdk/provider';
import { nowOf, sleep, systemClock } from '../core/clock.js';
import { ModelError, abortedError } from './model-error.js';
import { toPrompt, type PromptOptions } from './prompt.js';
import { readReply } from './reply-stream.js';
import { decideRetry, seconds, type Failure, type RetryOptions } from './retry-policy.js';
import { StreamWitness } from './stream-witness.js';
import { toolSchemaFor, type SchemaDialect } from './tool-schema.js';
import { failureOfTurn } from './turn-failure.js';
import type { ModelChunk, ModelProvider, ModelRequest, ToolSpec } from './types.js';

export type ToolChoice = 'auto' | 'none' | 'required' | { tool: string };

export interface LanguageModelSetup {
  /** Names the server in error messages (its base URL). */
  where: string;
  /** The model when the run names none. */
  defaultModel: string;
  /** The package's model for one turn; it must send every request through `fetch`. */
  model(modelId: string, fetch: typeof globalThis.fetch): LanguageModelV3;
  /** The fetch underneath (default: the global fetch, resolved per call). */
  fetch?: typeof globalThis.fetch;
  dialect: SchemaDialect;
  prompt: PromptOptions;
  settings: {
    maxOutputTokens?: number;
    temperature?: number;
    toolChoice?: ToolChoice;
    providerOptions?: LanguageModelV3CallOptions['providerOptions'];
  };
  retry: RetryOptions;
}

export function languageModelProvider(setup: LanguageModelSetup): ModelProvider {
  // Resolved per call, so a fetch installed after construction (a test's stub) is used.
  const baseFetch: typeof globalThis.fetch = setup.fetch ?? ((input, init) => fetch(input, init));

  return {
    async *complete(request: ModelRequest): AsyncIterable<ModelChunk> {
      const { signal } = request;
      if (signal.aborted) throw abortedError();
      const clock = request.clock ?? systemClock;
      const options = callOptions(setup, request);
      const modelId = request.model ? request.model : setup.defaultModel;
      for (let attempt = 0; ; attempt++) {
        const witness = new StreamWitness();
        let yielded = false;
        let failure: Failure;
        try {
          const { stream } = await setup.model(modelId, witness.wrap(baseFetch)).doStream(options);
          for await (const chunk of readReply(stream, witness)) {
            yielded ||= chunk.type === 'delta';
            yield chunk;
          }
          return;
        } catch (error) {
          if (signal.aborted) throw abortedError();
          if (error instanceof ModelError) throw error;
          failure = failureOfTurn(error, witness, setup.where);
          // Deltas already went out: a retry would repeat them.
          if (yielded)
            throw new ModelError(
              'model_error',
              `the model's reply from ${setup.where} broke off: ${failure.reason}`,
              failure.status,
            );
        }
        const decision = decideRetry(failure, attempt, setup.retry, setup.where);
        if (!decision.retry) throw decision.error;
        const deadline = request.context?.deadline;
        if (deadline !== undefined && nowOf(clock) + decision.waitMs >= deadline) {
          throw new ModelError(
            failure.status === 429 ? 'rate_limited' : 'model_error',
            `${failure.reason}; the retry in ${seconds(decision.waitMs)} would start after the run's deadline`,
            failure.status,
          );
        }
        request.onRetry?.(attempt + 1, `${failure.reason}; retrying in ${seconds(decision.waitMs)}`);
        try {
          await sleep(clock, decision.waitMs, signal);
        } catch {
          throw abortedError();
        }
      }
    },
  };
}

function callOptions(setup: LanguageModelSetup, request: ModelRequest): LanguageModelV3CallOptions {
  const { maxOutputTokens, temperature, toolChoice, providerOptions } = setup.settings;
  const tools = request.tools.map((tool) => functionTool(tool, setup.dialect));
  return {
    prompt: toPrompt(request.messages, setup.prompt),
    ...(tools.length > 0 ? { tools } : {}),
    ...(tools.length > 0 && toolChoice !== undefined
      ? {
          toolChoice:
            typeof toolChoice === 'string' ? { type: toolChoice } : { type: 'tool', toolName: toolChoice.tool },
        }
      : {}),
    ...(maxOutputTokens !== undefined ? { maxOutputTokens } : {}),
    ...(temperature !== undefined ? { temperature } : {}),
    ...(providerOptions ? { providerOptions } : {}),
    abortSignal: request.signal,
  };
}

function functionTool(tool: ToolSpec, dialect: SchemaDialect): LanguageModelV3FunctionTool {
  return {
    type: 'function',
    name: tool.name,
    description: tool.description,
    inputSchema: toolSchemaFor(tool.parameters, dialect),
  };
}
