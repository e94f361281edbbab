/*
 * One model turn of a run, as an async function the run chart's turn is provided with: the
 * run's inbox flushed into its conversation, the provider asked (deltas and retries on the
 * run's log), the reply's tokens counted, the reply on the log and in the conversation.
 */
import type { ModelReply, ModelTurnInput } from '../../machines/run.machine.js';
import type { Clock } from '../core/clock.js';
import { splitModel } from '../core/run-request.js';
import type { Conversations } from '../harness/conversation.js';
import { assistantMessageOf, modelMessageData, runModelTurn, unfinishedReplyError } from '../harness/model-turn.js';
import type { ModelProvider } from '../model/types.js';
import { assertMayAct, type SessionOwnership } from './ownership.js';
import type { RunLedger } from './run-ledger.js';
import type { RunTable } from './run-table.js';
import type { RunTools } from './run-tools.js';

export interface ModelTurnsDeps {
  table: RunTable;
  ledger: RunLedger;
  conversations: Conversations;
  models: ReadonlyMap<string, ModelProvider>;
  tools: Pick<RunTools, 'toolSpecsOf'>;
  clock: Clock;
  ownership?: Pick<SessionOwnership, 'mayAct'>; // in a cluster: a run stops once its process may no longer act
}

/**
 * @example
 * const turns = new ModelTurns(deps);
 * const reply = await turns.run({ runId, turn: 0 }, signal); // rejects once `signal` aborts
 */
export class ModelTurns {
  constructor(private readonly deps: ModelTurnsDeps) {}

  async run(input: ModelTurnInput, signal: AbortSignal): Promise<ModelReply> {
    const { table, ledger, conversations, ownership } = this.deps;
    const handle = table.require(input.runId);
    assertMayAct(ownership, handle.status.sessionId);
    await ledger.flushInbox(handle);
    const conversation = await conversations.messages(handle.status.sessionId);
    if (signal.aborted) throw abortError();
    const [providerId, modelName] = splitModel(handle.request.model);
    const reply = await runModelTurn({
      provider: this.deps.models.get(providerId)!,
      ...(modelName !== undefined ? { model: modelName } : {}),
      messages: conversation,
      tools: this.deps.tools.toolSpecsOf(handle.status.sessionId),
      signal,
      clock: this.deps.clock,
      context: {
        runId: input.runId,
        sessionId: handle.status.sessionId,
        turn: input.turn,
        input: handle.request.input,
        deadline: ledger.deadlineOf(handle),
      },
      onDelta: (text) => ledger.append(handle, 'model.delta', { turn: input.turn, text }),
      onRetry: (attempt, reason) => ledger.append(handle, 'run.retrying', { attempt, reason }),
    });
    if (signal.aborted) throw abortError();
    assertMayAct(ownership, handle.status.sessionId); // an answer that outlived the lease must not act here
    ledger.addUsage(handle, reply.usage);
    ledger.append(handle, 'model.message', modelMessageData(input.turn, reply));
    await conversations.append(handle.status.sessionId, assistantMessageOf(reply));
    const unfinished = unfinishedReplyError(reply);
    if (unfinished) throw Object.assign(new Error(unfinished.message), { code: unfinished.code });
    return reply;
  }
}

function abortError(): Error {
  return Object.assign(new Error('aborted'), { name: 'AbortError', code: 'aborted' });
}
