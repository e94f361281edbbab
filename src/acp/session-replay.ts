/*
 * session/load: a stored session replayed as the updates an editor would have seen live, plus
 * the user's side, which live updates leave out (the editor showed it as it was typed): each
 * run's input before its first event, and each steered message where the run took it in.
 */
import type { SessionUpdate } from '@agentclientprotocol/sdk';
import type { StoredSession } from './backend.js';
import type { SessionUpdates } from './session-updates.js';

export function replayUpdates(stored: StoredSession, updates: SessionUpdates): SessionUpdate[] {
  const replayed: SessionUpdate[] = [];
  const runsSeen = new Set<string>();
  for (const event of stored.events) {
    if (!runsSeen.has(event.runId)) {
      runsSeen.add(event.runId);
      const input = stored.inputs.get(event.runId);
      if (input !== undefined && input !== '') replayed.push(userChunk(input));
    }
    if (event.type === 'run.steered') replayed.push(userChunk(event.text));
    replayed.push(...updates.map(event));
  }
  return replayed;
}

function userChunk(text: string): SessionUpdate {
  return { sessionUpdate: 'user_message_chunk', content: { type: 'text', text } };
}
