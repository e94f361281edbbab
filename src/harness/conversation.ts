/*
 * Session conversations: the context every run of a session continues. Loaded from the
 * store once per session, then kept in memory and appended to both.
 */
import type { CodedError } from '../core/chart-words.js';
import type { Message } from '../model/types.js';
import type { Store } from '../store/types.js';

export class Conversations {
  private readonly loaded = new Map<string, Message[]>();
  private readonly loading = new Map<string, Promise<Message[]>>();
  /** Writes of a session happen one after another, in the order they were asked for. */
  private readonly tails = new Map<string, Promise<void>>();

  constructor(private readonly store: Store) {}

  /** The conversation once every write asked for so far has landed. */
  async messages(sessionId: string): Promise<Message[]> {
    await this.tails.get(sessionId);
    return [...(await this.load(sessionId))];
  }

  append(sessionId: string, ...messages: Message[]): Promise<void> {
    if (messages.length === 0) return this.tails.get(sessionId) ?? Promise.resolve();
    return this.enqueue(sessionId, async (conversation) => {
      conversation.push(...messages);
      await this.store.appendMessages(sessionId, messages);
    });
  }

  /** Answers every unanswered tool call of the last assistant message with an error. */
  closeToolCalls(sessionId: string, error: CodedError): Promise<void> {
    return this.enqueue(sessionId, async (conversation) => {
      const answers = unansweredToolCalls(conversation).map((id): Message => ({
        role: 'tool',
        toolCallId: id,
        content: JSON.stringify({ error }),
      }));
      if (answers.length === 0) return;
      conversation.push(...answers);
      await this.store.appendMessages(sessionId, answers);
    });
  }

  /** Resolves once no write of the session is in flight. */
  async settled(sessionId: string): Promise<void> {
    while (this.tails.has(sessionId)) await this.tails.get(sessionId);
  }

  /**
   * Forgets the session's cached conversation (another process may append to it next); false,
   * keeping it, while a write of it is still in flight.
   */
  forget(sessionId: string): boolean {
    if (this.tails.has(sessionId)) return false;
    this.loaded.delete(sessionId);
    this.loading.delete(sessionId);
    return true;
  }

  private enqueue(sessionId: string, write: (conversation: Message[]) => Promise<void>): Promise<void> {
    const previous = this.tails.get(sessionId) ?? Promise.resolve();
    const next = previous.then(async () => write(await this.load(sessionId)));
    const tail = next.catch(() => {});
    this.tails.set(sessionId, tail);
    void tail.then(() => {
      if (this.tails.get(sessionId) === tail) this.tails.delete(sessionId);
    });
    return next;
  }

  private load(sessionId: string): Promise<Message[]> | Message[] {
    const cached = this.loaded.get(sessionId);
    if (cached) return cached;
    let pending = this.loading.get(sessionId);
    if (!pending) {
      pending = this.store.readConversation(sessionId).then((messages) => {
        this.loaded.set(sessionId, messages);
        this.loading.delete(sessionId);
        return messages;
      });
      this.loading.set(sessionId, pending);
    }
    return pending;
  }
}

/**
 * Tool calls of the last assistant message that never got a result (the run was cancelled,
 * timed out or the engine stopped): a model API rejects such a conversation, so each gets a
 * synthetic error result.
 */
export function unansweredToolCalls(messages: readonly Message[]): string[] {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]!;
    if (message.role !== 'assistant') continue;
    const answered = new Set(
      messages
        .slice(i + 1)
        .filter((m) => m.role === 'tool')
        .map((m) => m.toolCallId),
    );
    return (message.toolCalls ?? []).map((c) => c.id).filter((id) => !answered.has(id));
  }
  return [];
}
