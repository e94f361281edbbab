/*
 * One model turn: stream the provider's answer, forwarding text deltas, and return the final
 * reply with a call id on every tool call (generated when the model gives none), how the model
 * finished and what the turn cost. Also what the engine records of a reply: the conversation
 * entry (always valid to send back), the `model.message` event, and whether a final reply was
 * cut short.
 */
import type { ModelReply, ToolCallRequest } from '../../machines/run.machine.js';
import type { Clock } from '../core/clock.js';
import type {
  FinishReason,
  Message,
  MessageToolCall,
  ModelProvider,
  ModelRunContext,
  ProviderMetadata,
  ReasoningPart,
  TokenUsage,
  ToolSpec,
} from '../model/types.js';

export interface ModelTurnArgs {
  provider: ModelProvider;
  model?: string;
  messages: Message[];
  tools: ToolSpec[];
  signal: AbortSignal;
  clock: Clock;
  context: ModelRunContext;
  onDelta(text: string): void;
  onRetry(attempt: number, reason: string): void;
}

/** A tool call of a reply; `malformedArguments` holds the model's text when it was not a JSON object. */
export type TurnToolCall = MessageToolCall & { malformedArguments?: string };

export interface TurnReply extends ModelReply {
  toolCalls: TurnToolCall[];
  finishReason?: FinishReason;
  usage?: TokenUsage;
  reasoning?: ReasoningPart[];
  providerMetadata?: ProviderMetadata;
}

export async function runModelTurn(args: ModelTurnArgs): Promise<TurnReply> {
  let streamed = '';
  let reply: TurnReply | undefined;
  const stream = args.provider.complete({
    messages: args.messages,
    tools: args.tools,
    signal: args.signal,
    clock: args.clock,
    context: args.context,
    model: args.model,
    onRetry: args.onRetry,
  });
  for await (const chunk of stream) {
    if (args.signal.aborted) break;
    if (chunk.type === 'delta') {
      streamed += chunk.text;
      args.onDelta(chunk.text);
    } else {
      const { type: _type, toolCalls, ...rest } = chunk;
      reply = {
        ...rest,
        toolCalls: toolCalls.map((call, index) => ({
          id: call.id ?? `call_${args.context.turn}_${index}`,
          name: call.name,
          args: call.args ?? {},
          ...(call.malformedArguments !== undefined ? { malformedArguments: call.malformedArguments } : {}),
          ...(call.providerMetadata ? { providerMetadata: call.providerMetadata } : {}),
        })),
      };
    }
  }
  if (args.signal.aborted) throw Object.assign(new Error('model turn aborted'), { code: 'aborted' });
  return reply ?? { text: streamed, toolCalls: [] };
}

/** The reply as the conversation keeps it: malformed argument text stays out (its call answers with the error). */
export function assistantMessageOf(reply: TurnReply): Message {
  const toolCalls = reply.toolCalls.map(({ malformedArguments: _raw, ...call }): MessageToolCall => call);
  return {
    role: 'assistant',
    content: reply.text,
    ...(toolCalls.length > 0 ? { toolCalls } : {}),
    ...(reply.reasoning && reply.reasoning.length > 0 ? { reasoning: reply.reasoning } : {}),
    ...(reply.providerMetadata ? { providerMetadata: reply.providerMetadata } : {}),
  };
}

/** The `model.message` event: what the model said, without the provider's opaque metadata. */
export function modelMessageData(turn: number, reply: TurnReply) {
  return {
    turn,
    text: reply.text,
    toolCalls: reply.toolCalls.map(({ id, name, args }): ToolCallRequest => ({ id, name, args })),
    ...(reply.finishReason !== undefined ? { finishReason: reply.finishReason } : {}),
    ...(reply.usage !== undefined ? { usage: reply.usage } : {}),
  };
}

/**
 * A final reply (no tool calls) that the model did not finish: the run fails instead of
 * passing the fragment off as its answer. A cut reply with tool calls goes on: its calls
 * either parsed or fail as `invalid_arguments`, and the model gets another turn.
 */
export function unfinishedReplyError(
  reply: TurnReply,
): { code: 'model_truncated' | 'content_filtered'; message: string } | undefined {
  if (reply.toolCalls.length > 0) return undefined;
  if (reply.finishReason === 'length') {
    return {
      code: 'model_truncated',
      message:
        'the model reached its output limit (finish reason "length") before finishing its answer; raise max_tokens or ask for less',
    };
  }
  if (reply.finishReason === 'content_filter') {
    return {
      code: 'content_filtered',
      message: 'the provider\'s content filter stopped the answer (finish reason "content_filter")',
    };
  }
  return undefined;
}

/** Token usage of a run so far, plus one turn's; undefined while no provider reported any. */
export function addUsage(total: TokenUsage | undefined, turn: TokenUsage | undefined): TokenUsage | undefined {
  if (!turn) return total;
  const cached = (total?.cachedTokens ?? 0) + (turn.cachedTokens ?? 0);
  return {
    inputTokens: (total?.inputTokens ?? 0) + turn.inputTokens,
    outputTokens: (total?.outputTokens ?? 0) + turn.outputTokens,
    ...(cached > 0 ? { cachedTokens: cached } : {}),
  };
}
