/**
 * The baseline of the admission benchmark: the engine a user would write by hand without
 * actors, doing the same work per run — the same zod validation, a generated id, a FIFO
 * session lock with a bounded lane, two counting semaphores, a deadline timer and an
 * AbortController, events with seq / sessionSeq / timestamp appended to an array log before
 * they are published, the session conversation, and the same instant model turn.
 */
import { randomUUID } from 'node:crypto';
import { RunRequestSchema } from '../src/core/run-request.js';

class Semaphore {
  private readonly waiters: (() => void)[] = [];
  constructor(private free: number) {}
  async acquire(): Promise<void> {
    if (this.free > 0) {
      this.free -= 1;
      return;
    }
    await new Promise<void>((resolve) => this.waiters.push(resolve));
  }
  release(): void {
    const next = this.waiters.shift();
    if (next) next();
    else this.free += 1;
  }
}

interface LoggedEvent {
  type: string;
  runId: string;
  sessionId: string;
  seq: number;
  sessionSeq: number;
  at: string;
  [key: string]: unknown;
}

async function* instantModel(signal: AbortSignal): AsyncIterable<{ type: 'delta' | 'message'; text: string }> {
  if (signal.aborted) return;
  yield { type: 'delta', text: 'ok' };
  yield { type: 'message', text: 'ok' };
}

export function handRolledEngine(limits: {
  maxGlobal: number;
  maxPerAgent: number;
  laneCapacity: number;
  timeoutMs: number;
}) {
  const sessionTails = new Map<string, { tail: Promise<void>; waiting: number }>();
  const global = new Semaphore(limits.maxGlobal);
  const perAgent = new Map<string, Semaphore>();
  const log: LoggedEvent[] = [];
  const sessionSeq = new Map<string, number>();
  const conversations = new Map<string, { role: string; content: string }[]>();
  const listeners = new Set<(event: LoggedEvent) => void>();

  async function run(runId: string, sessionId: string, agentId: string, input: string): Promise<void> {
    let seq = 0;
    const emit = (type: string, data: Record<string, unknown> = {}) => {
      const next = (sessionSeq.get(sessionId) ?? 0) + 1;
      sessionSeq.set(sessionId, next);
      const event: LoggedEvent = {
        type,
        runId,
        sessionId,
        seq: ++seq,
        sessionSeq: next,
        at: new Date().toISOString(),
        ...data,
      };
      log.push(event);
      for (const listener of listeners) listener(event);
    };
    let agent = perAgent.get(agentId);
    if (!agent) perAgent.set(agentId, (agent = new Semaphore(limits.maxPerAgent)));
    await global.acquire();
    await agent.acquire();
    const controller = new AbortController();
    const deadline = setTimeout(() => controller.abort(new Error('timeout')), limits.timeoutMs);
    try {
      emit('run.started', { agentId });
      emit('turn.started', { turn: 0 });
      let conversation = conversations.get(sessionId);
      if (!conversation) conversations.set(sessionId, (conversation = []));
      conversation.push({ role: 'user', content: input });
      let text = '';
      for await (const chunk of instantModel(controller.signal)) {
        if (chunk.type === 'delta') emit('model.delta', { turn: 0, text: chunk.text });
        else text = chunk.text;
      }
      emit('model.message', { turn: 0, text, toolCalls: [] });
      conversation.push({ role: 'assistant', content: text });
      emit('turn.finished', { turn: 0 });
      emit('run.completed', { output: text, usage: { turns: 1 }, toolCalls: 0 });
    } finally {
      clearTimeout(deadline);
      agent.release();
      global.release();
    }
  }

  return {
    log,
    listeners,
    submit(raw: unknown): Promise<void> {
      const request = RunRequestSchema.parse(raw);
      const runId = request.runId ?? randomUUID();
      let session = sessionTails.get(request.sessionId);
      if (!session) sessionTails.set(request.sessionId, (session = { tail: Promise.resolve(), waiting: 0 }));
      if (session.waiting >= limits.laneCapacity) throw new Error('lane_full');
      session.waiting += 1;
      const mine = session;
      const next = session.tail.then(() => {
        mine.waiting -= 1;
        return run(runId, request.sessionId, request.agentId ?? 'main', request.input);
      });
      session.tail = next;
      return next;
    },
  };
}
