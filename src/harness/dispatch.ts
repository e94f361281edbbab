/*
 * The dispatch seam: how one batch of tool calls is executed. The engine calls
 * `dispatch(batch, ctx)` and gets one result per call, in input order. This serial
 * dispatcher runs calls one after another; the claim-aware Act phase replaces it.
 */
import type { ToolCallRequest } from '../../machines/run.machine.js';
import type { RunEventData } from '../engine/run-events.js';
import type { AnyTool } from '../tools/tool.js';

export interface ToolCallResult {
  callId: string;
  tool: string;
  ok: boolean;
  output?: unknown;
  error?: { code: string; message: string };
  durationMs: number;
  synthetic?: boolean;
}

export interface DispatchContext {
  runId: string;
  sessionId: string;
  turn: number;
  signal: AbortSignal;
  workspace: string;
  tools: ReadonlyMap<string, AnyTool>;
  emit<K extends 'tool.started' | 'tool.finished'>(type: K, data: RunEventData[K]): void;
  now(): number;
}

export type Dispatch = (batch: ToolCallRequest[], ctx: DispatchContext) => Promise<ToolCallResult[]>;

export const serialDispatch: Dispatch = async (batch, ctx) => {
  const results: ToolCallResult[] = [];
  for (const call of batch) {
    if (ctx.signal.aborted) {
      results.push(finish(ctx, call, { ok: false, error: { code: 'cancelled', message: 'run cancelled before this call started' }, durationMs: 0, synthetic: true }));
      continue;
    }
    ctx.emit('tool.started', { callId: call.id, tool: call.name, args: call.args });
    const started = ctx.now();
    const outcome = await executeCall(call, ctx);
    results.push(finish(ctx, call, { ...outcome, durationMs: ctx.now() - started }));
  }
  return results;
};

function finish(
  ctx: DispatchContext,
  call: ToolCallRequest,
  outcome: Omit<ToolCallResult, 'callId' | 'tool'>,
): ToolCallResult {
  const result: ToolCallResult = { callId: call.id, tool: call.name, ...outcome };
  ctx.emit('tool.finished', {
    callId: call.id,
    ok: result.ok,
    ...(result.ok ? { output: result.output } : { error: result.error }),
    durationMs: result.durationMs,
    ...(result.synthetic ? { synthetic: true } : {}),
  });
  return result;
}

/** Runs one call; every failure becomes an error result the model sees. */
export async function executeCall(
  call: ToolCallRequest,
  ctx: DispatchContext,
): Promise<Pick<ToolCallResult, 'ok' | 'output' | 'error'>> {
  const tool = ctx.tools.get(call.name);
  if (!tool) return { ok: false, error: { code: 'unknown_tool', message: `no tool named "${call.name}"` } };
  const parsed = tool.input.safeParse(call.args);
  if (!parsed.success) {
    const detail = parsed.error.issues.map((i) => `${i.path.join('.') || '(input)'}: ${i.message}`).join('; ');
    return { ok: false, error: { code: 'invalid_arguments', message: `invalid arguments for ${call.name}: ${detail}` } };
  }
  try {
    const output = await tool.execute(parsed.data, {
      signal: ctx.signal,
      workspace: ctx.workspace,
      callId: call.id,
      runId: ctx.runId,
      sessionId: ctx.sessionId,
    });
    return { ok: true, output };
  } catch (error) {
    if (ctx.signal.aborted) return { ok: false, error: { code: 'cancelled', message: 'run cancelled during this call' } };
    const code = (error as { code?: unknown } | null)?.code;
    return {
      ok: false,
      error: { code: typeof code === 'string' ? code : 'tool_error', message: error instanceof Error ? error.message : String(error) },
    };
  }
}
