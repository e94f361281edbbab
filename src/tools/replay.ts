/*
 * Replay rules (docs/durable-runs.md): what a resumed run does with a tool call that was
 * interrupted — it started, and no result of it was stored. A tool declares its rule with
 * `defineTool({ replay })`; replayRuleOf() is what the resume asks, per call.
 *
 * - `'safe'`: run it again. The default for tools that say they are read-only or idempotent.
 * - `'unsafe'`: never run it again; the model gets the `outcome_unknown` error result
 *   (outcomeUnknownError) and can look before it repeats the call. The default for the rest.
 * - `{ probe: reconcile }`: `reconcile(input, ctx)` looks at the world and answers `done`
 *   (with the result the call is given), `not_done` (it is run again) or `unknown` (the
 *   world does not tell: treated as unsafe).
 */
import type { ClaimContext } from '../concurrency/index.js';
import type { CodedError } from '../core/errors.js';
import type { AnyTool, ToolContext } from './tool.js';

/** What a probe found: the call's effect is there (and its result), it is not, or the world does not tell. */
export type ReconcileAnswer =
  { state: 'done'; result: unknown } | { state: 'not_done' } | { state: 'unknown'; why: string };

export type Reconcile<I> = (input: I, ctx: ToolContext) => Promise<ReconcileAnswer>;

/** A call's replay rule. */
export type ReplayRule<I = unknown> = 'safe' | 'unsafe' | { probe: Reconcile<I> };

/**
 * A tool's declaration: one rule, or one chosen per call from its validated input and the run's
 * workspace and session (bash: by the claim derived from its command).
 */
export type ReplayDeclaration<I> = ReplayRule<I> | ((input: I, ctx: ClaimContext) => ReplayRule<I>);

/** The error code of an interrupted unsafe call's result. */
export const OUTCOME_UNKNOWN = 'outcome_unknown';

/**
 * The rule for one call of `tool` with `args` (the arguments it executes with) in the run's
 * workspace and session. Fail-closed: arguments the tool's schema refuses, or a rule function
 * that throws, make it unsafe.
 */
export function replayRuleOf(tool: AnyTool, args: unknown, ctx: ClaimContext): ReplayRule {
  const declared = tool.replay as ReplayDeclaration<unknown> | undefined;
  if (declared === undefined) return tool.readOnly === true || tool.idempotent === true ? 'safe' : 'unsafe';
  if (typeof declared !== 'function') return ruleOf(declared);
  const parsed = tool.input.safeParse(args);
  if (!parsed.success) return 'unsafe';
  try {
    return ruleOf(declared(parsed.data, ctx));
  } catch {
    return 'unsafe';
  }
}

/**
 * What the model is told of an interrupted call that is not run again: it may or may not have
 * taken effect, so it should check before it repeats it.
 */
export function outcomeUnknownError(tool: string): CodedError {
  return {
    code: OUTCOME_UNKNOWN,
    message:
      `the ${tool} call was interrupted (the server stopped while it ran) and may or may not have taken effect; ` +
      'it was not run again. Check its effect (read the file, list the state) before you repeat it.',
  };
}

/** A probe's reconcile, run with the validated input; a reconcile that throws answers `unknown`. */
export async function reconcileCall(
  tool: AnyTool,
  rule: { probe: Reconcile<unknown> },
  args: unknown,
  ctx: ToolContext,
): Promise<ReconcileAnswer> {
  const parsed = tool.input.safeParse(args);
  if (!parsed.success) return { state: 'unknown', why: 'the arguments no longer validate' };
  try {
    return await rule.probe(parsed.data, ctx);
  } catch (error) {
    return { state: 'unknown', why: `the probe failed: ${error instanceof Error ? error.message : String(error)}` };
  }
}

function ruleOf(rule: ReplayRule<unknown>): ReplayRule {
  if (rule === 'safe' || rule === 'unsafe') return rule;
  if (typeof rule === 'object' && rule !== null && typeof rule.probe === 'function') return rule;
  return 'unsafe';
}
