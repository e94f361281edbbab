/*
 * Frames of recent events, shared by the connections they go to: a live event reaches every
 * subscriber as the same object, so subscriptions with the same id (each connection's first
 * is "sub-1") share one serialized frame instead of building (and flattening) one each —
 * most of the cost of fanning events out to many clients. A frame is kept as its UTF-8
 * bytes: a string would be measured and encoded again for every socket it goes to.
 * Bounded by the size kept.
 */
import { notificationFrame, toJson } from './protocol.js';

const recentEvents = new Map<object, { json: string; frames: Map<string, Buffer>; chars: number }>();
const RECENT_EVENT_CHARS = 4 * 1024 * 1024;
let recentEventChars = 0;

/** The `event` notification frame of one event for one subscription, as UTF-8 (a text frame). */
export function eventFrame(subscriptionId: string, event: object): Buffer {
  let serialized = recentEvents.get(event);
  let frame = serialized?.frames.get(subscriptionId);
  if (frame !== undefined) return frame;
  if (!serialized) {
    const json = toJson(event);
    serialized = { json, frames: new Map(), chars: json.length };
    recentEvents.set(event, serialized);
    recentEventChars += json.length;
  }
  frame = Buffer.from(
    notificationFrame('event', `{"subscriptionId":${JSON.stringify(subscriptionId)},"event":${serialized.json}}`),
  );
  serialized.frames.set(subscriptionId, frame);
  serialized.chars += frame.length;
  recentEventChars += frame.length;
  for (const [oldest, entry] of recentEvents) {
    if (recentEventChars <= RECENT_EVENT_CHARS) break;
    recentEvents.delete(oldest);
    recentEventChars -= entry.chars;
  }
  return frame;
}
