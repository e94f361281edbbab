/*
 * The words the statecharts share with each other and with src/ (which re-exports them from
 * src/core/chart-words.ts): the one coded error, how an unknown thrown value becomes one, and
 * who holds what a waiting tool call needs. machines/ may not import src/, so the words live
 * here, once. Pure.
 */

/** The one shape of an error that crosses a boundary: a code to switch on, a message to read. */
export interface CodedError {
  code: string;
  message: string;
}

/** A thrown value as a coded error: its own string `code` if it has one, else `fallbackCode`. */
export function errorOf(error: unknown, fallbackCode: string): CodedError {
  const message = error instanceof Error ? error.message : String(error);
  const ownCode = (error as { code?: unknown } | null)?.code;
  return { code: typeof ownCode === 'string' ? ownCode : fallbackCode, message };
}

/** Who holds (or waits for) a claim: one tool call of one run. */
export interface ClaimHolder {
  runId: string;
  callId: string;
  tool: string;
}

/** Why a call waits: the call ahead of it and the resource they both want. */
export interface ClaimBlock {
  blockedBy: ClaimHolder;
  resource: string;
}
