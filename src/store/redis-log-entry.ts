/*
 * How events sit in the Redis store's streams (a run's log, a session's log, the feed). The
 * events of one step that reach Redis in one write call share one entry: its id is the number
 * of the last of them (`<seq>-0` in a run's log, `<sessionSeq>-0` in a session's), so an entry
 * cannot repeat a number already stored, a replay from a number is still one XRANGE (the first
 * entry it returns may begin before that number: readers drop what they asked to skip), and
 * live reading still goes on from the last entry read. A lone event is field `e` (the event),
 * several are field `b` (the array, in order).
 */
import type { RunEvent } from '../core/run-events.js';

export type StreamEntry = [id: string, fields: string[]];

/** The fields of an entry holding these events (each already JSON). */
export function entryFields(jsonEvents: string[]): string[] {
  return jsonEvents.length === 1 ? ['e', jsonEvents[0]!] : ['b', `[${jsonEvents.join(',')}]`];
}

/** The events of one entry, in order. */
export function eventsOfEntry([, fields]: StreamEntry): RunEvent[] {
  for (let i = 0; i + 1 < fields.length; i += 2) {
    if (fields[i] === 'e') return [JSON.parse(fields[i + 1]!) as RunEvent];
    if (fields[i] === 'b') return JSON.parse(fields[i + 1]!) as RunEvent[];
  }
  return [];
}

/** The events of entries, in order. */
export function eventsOfEntries(entries: StreamEntry[]): RunEvent[] {
  return entries.flatMap(eventsOfEntry);
}

/** The last event of an entry (the one its id numbers). */
export function lastEventOf(entry: StreamEntry): RunEvent | undefined {
  return eventsOfEntry(entry).at(-1);
}
