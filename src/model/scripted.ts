/*
 * The scripted provider: deterministic turns given inline (or loaded from a JSON file by the
 * caller). Powers `npm start`, the demo, the tests and the simulator. Latency waits on the
 * engine clock and honours the AbortSignal, so a SimulatedClock drives it.
 */
import { sleep, systemClock } from '../core/clock.js';
import type { Message, ModelChunk, ModelProvider, ModelRequest } from './types.js';

export type ScriptTurn =
  | { text: string; delayMs?: number }
  | { toolCalls: { name: string; args: unknown; id?: string }[]; text?: string; delayMs?: number }
  | { error: string; delayMs?: number };

export interface ScriptContext {
  runId: string;
  sessionId: string;
  turn: number;
  input: string;
  messages: Message[];
}

export type Script = ScriptTurn[] | ((ctx: ScriptContext) => ScriptTurn);

export interface ScriptedModelOptions {
  /** Latency of every turn that does not set its own. */
  delayMs?: number;
}

export class ScriptedModelError extends Error {
  override readonly name = 'ScriptedModelError';
  readonly code = 'model_error';
}

export function scriptedModel(script: Script, opts: ScriptedModelOptions = {}): ModelProvider {
  return {
    async *complete(request: ModelRequest): AsyncIterable<ModelChunk> {
      const ctx: ScriptContext = {
        runId: request.context?.runId ?? '',
        sessionId: request.context?.sessionId ?? '',
        turn: request.context?.turn ?? 0,
        input: request.context?.input ?? '',
        messages: request.messages,
      };
      const turn: ScriptTurn = typeof script === 'function' ? script(ctx) : (script[ctx.turn] ?? { text: 'done' });
      const delayMs = turn.delayMs ?? opts.delayMs ?? 0;
      if (delayMs > 0) await sleep(request.clock ?? systemClock, delayMs, request.signal);
      if (request.signal.aborted) return;
      if ('error' in turn) throw new ScriptedModelError(turn.error);
      const text = turn.text ?? '';
      if (text) yield { type: 'delta', text };
      yield { type: 'message', text, toolCalls: 'toolCalls' in turn ? turn.toolCalls : [] };
    },
  };
}
