/*
 * The session's conversation as the AI SDK's provider-level prompt. What goes out is always
 * valid for a strict server: tool-call arguments are JSON objects, every tool result answers a
 * call of the assistant message before it, and no assistant message is empty. Provider
 * metadata kept on a message goes back on the part it came with.
 */
import type { LanguageModelV3Message, LanguageModelV3Prompt, SharedV3ProviderOptions } from '@ai-sdk/provider';
import type { Message, ProviderMetadata } from './types.js';

export interface PromptOptions {
  /** Sends reasoning back (Anthropic thinking blocks, Gemini thoughts, DeepSeek's reasoning_content). */
  replayReasoning: boolean;
  /** Where the provider package reads the metadata it once reported (default: where it reported it). */
  replayOptions?: (metadata: ProviderMetadata) => SharedV3ProviderOptions;
}

type AssistantPart = Extract<LanguageModelV3Message, { role: 'assistant' }>['content'][number];

export function toPrompt(messages: readonly Message[], options: PromptOptions): LanguageModelV3Prompt {
  const prompt: LanguageModelV3Prompt = [];
  const replay = (metadata: ProviderMetadata | undefined) =>
    metadata ? { providerOptions: options.replayOptions ? options.replayOptions(metadata) : metadata } : {};
  /** Calls of the last assistant message, by id: the only results a server accepts next. */
  let openCalls = new Map<string, string>();

  for (const message of messages) {
    switch (message.role) {
      case 'system':
        prompt.push({ role: 'system', content: message.content });
        break;
      case 'user':
        prompt.push({ role: 'user', content: [{ type: 'text', text: message.content }] });
        break;
      case 'assistant': {
        const parts: AssistantPart[] = [];
        if (options.replayReasoning) {
          for (const reasoning of message.reasoning ?? []) {
            if (reasoning.text !== '' || reasoning.providerMetadata)
              parts.push({ type: 'reasoning', text: reasoning.text, ...replay(reasoning.providerMetadata) });
          }
        }
        if (message.content !== '')
          parts.push({ type: 'text', text: message.content, ...replay(message.providerMetadata) });
        openCalls = new Map();
        for (const call of message.toolCalls ?? []) {
          openCalls.set(call.id, call.name);
          parts.push({
            type: 'tool-call',
            toolCallId: call.id,
            toolName: call.name,
            input: objectArguments(call.args),
            ...replay(call.providerMetadata),
          });
        }
        // An empty assistant turn is refused by Anthropic and says nothing to anyone else.
        if (parts.length > 0) prompt.push({ role: 'assistant', content: parts });
        break;
      }
      case 'tool': {
        const toolName = openCalls.get(message.toolCallId ?? '');
        // A result for no call of the previous assistant message is refused by every strict server.
        if (toolName === undefined) break;
        prompt.push({
          role: 'tool',
          content: [
            {
              type: 'tool-result',
              toolCallId: message.toolCallId!,
              toolName,
              output: { type: 'text', value: message.content },
            },
          ],
        });
        break;
      }
    }
  }
  return prompt;
}

/** Arguments stored before malformed calls were kept out may be anything: only an object goes out. */
function objectArguments(args: unknown): Record<string, unknown> {
  return typeof args === 'object' && args !== null && !Array.isArray(args) ? (args as Record<string, unknown>) : {};
}
