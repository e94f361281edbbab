/*
 * The texts the engine writes itself for the busy policies: which `collect` messages may merge
 * (their key), the input of a merged run, and the notices a run gets about messages dropped by
 * `summarize_oldest` or rolled back. Deterministic — no model call — so a replay gives the same words.
 */
import type { AdmittedRequest } from '../core/run-request.js';

/**
 * Two `collect` messages merge only when their keys are equal: same agent, model, workspace,
 * approval tier, unattended flag, priority and delegating run. A message with attachments, a
 * timeout / iteration / sandbox override or a start deadline never merges (no key): its own
 * settings could not hold for the others.
 */
export function collectKeyOf(request: AdmittedRequest, workspace: string): string | undefined {
  if (request.busyPolicy !== 'collect' || !request.plainText || request.startBy !== undefined) return undefined;
  return JSON.stringify([
    request.agentId,
    request.model,
    workspace,
    request.approvalTier ?? '',
    request.unattended === true,
    request.priority,
    request.parentRunId ?? '',
  ]);
}

/** The input of a run that carries several `collect` messages: each in order, with its id and metadata. */
export function collectedInput(
  messages: readonly { runId: string; input: string; metadata?: Record<string, string>; createdAt?: string }[],
): string {
  const parts = messages.map((m, i) => {
    const meta = Object.entries(m.metadata ?? {}).map(([k, v]) => `${k}=${v}`);
    const head = [
      `message ${i + 1} of ${messages.length}`,
      `id ${m.runId}`,
      ...(m.createdAt ? [`sent ${m.createdAt}`] : []),
      ...meta,
    ].join(', ');
    return `[${head}]\n${m.input}`;
  });
  return `${messages.length} messages arrived while you were busy; answer them together, in order.\n\n${parts.join('\n\n')}`;
}

/** The first `words` words of a message, for a notice. */
export function firstWords(text: string, words = 8): string {
  const all = text
    .trim()
    .split(/\s+/)
    .filter((w) => w.length > 0);
  return all.slice(0, words).join(' ') + (all.length > words ? ' …' : '');
}

/** What the next run is told about messages `summarize_oldest` dropped. */
export function overflowNotice(dropped: readonly { runId: string; input: string }[]): string {
  const lines = dropped.map((m, i) => `${i + 1}. "${firstWords(m.input)}" (id ${m.runId})`);
  return (
    `[${dropped.length} earlier message${dropped.length === 1 ? ' was' : 's were'} dropped ` +
    `unanswered because too many were waiting:]\n${lines.join('\n')}`
  );
}

/** What a rollback's run is told about the run it replaced (its messages are in the conversation still). */
export function rollbackNotice(rolledBack: { runId: string; input: string }): string {
  return (
    `[The previous request ("${firstWords(rolledBack.input)}", id ${rolledBack.runId}) was rolled ` +
    `back by the user: disregard it and anything done for it, and answer the next message instead.]`
  );
}
