/*
 * One model turn: stream the provider's answer, forwarding text deltas, and return the final
 * message with a call id on every tool call (generated when the model gives none).
 */
import type { ModelReply } from '../../machines/run.machine.js';
import type { Clock } from '../core/clock.js';
import type { Message, ModelProvider, ModelRunContext, ToolSpec } from '../model/types.js';

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

export async function runModelTurn(args: ModelTurnArgs): Promise<ModelReply> {
  let streamed = '';
  let reply: ModelReply | undefined;
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
      reply = {
        text: chunk.text,
        toolCalls: chunk.toolCalls.map((call, index) => ({
          id: call.id ?? `call_${args.context.turn}_${index}`,
          name: call.name,
          args: call.args ?? {},
        })),
      };
    }
  }
  if (args.signal.aborted) throw Object.assign(new Error('model turn aborted'), { code: 'aborted' });
  return reply ?? { text: streamed, toolCalls: [] };
}
