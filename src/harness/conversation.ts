/*
 * Session conversations: the context every run of a session continues. Loaded from the
 * store once per session, then kept in memory and appended to both.
 */
import type { Message } from '../model/types.js';
import type { Store } from '../store/types.js';

export class Conversations {
  private readonly loaded = new Map<string, Message[]>();
  private readonly loading = new Map<string, Promise<Message[]>>();

  constructor(private readonly store: Store) {}

  async get(sessionId: string): Promise<Message[]> {
    const cached = this.loaded.get(sessionId);
    if (cached) return cached;
    let pending = this.loading.get(sessionId);
    if (!pending) {
      pending = this.store.readConversation(sessionId).then((messages) => {
        const current = this.loaded.get(sessionId) ?? messages;
        this.loaded.set(sessionId, current);
        this.loading.delete(sessionId);
        return current;
      });
      this.loading.set(sessionId, pending);
    }
    return pending;
  }

  async append(sessionId: string, ...messages: Message[]): Promise<void> {
    const conversation = await this.get(sessionId);
    conversation.push(...messages);
    await this.store.appendMessages(sessionId, messages);
  }
}
