/*
 * One engine inspection listener for all `inspect.subscribe` subscriptions of a gateway:
 * each InspectionEvent is serialized once (inspection-frames.ts) and handed to every
 * subscriber as JSON text; every subscriber reads the same stream of frames, so the context
 * deltas in them apply to what each one holds.
 * The engine builds inspection events only while someone listens, so the listener is
 * attached with the first subscriber and detached with the last. A new subscriber first
 * gets the live actors as they are (current()), so a page opened mid-run shows them at once.
 */
import type { InspectionEvent } from 'xstate';
import type { GatewayEngine } from '../method-handlers.js';
import { InspectionFrames } from './inspection-frames.js';

export type InspectSubscriber = (eventJson: string) => void;

export class InspectFanout {
  private readonly subscribers = new Set<InspectSubscriber>();
  private detach: (() => void) | undefined;
  /** Starts afresh with each first subscriber: what the last stream's readers held is gone with them. */
  private frames = new InspectionFrames();

  constructor(
    private readonly engine: GatewayEngine,
    private readonly onError: (error: unknown) => void,
  ) {}

  subscribe(subscriber: InspectSubscriber): () => void {
    this.subscribers.add(subscriber);
    this.detach ??= this.engine.inspect((event) => this.relay(event));
    return () => {
      this.subscribers.delete(subscriber);
      if (this.subscribers.size === 0) this.close();
    };
  }

  /** A snapshot event per live actor as it is now, serialized: what a new subscriber starts from. */
  current(): string[] {
    const events: string[] = [];
    for (const event of this.engine.inspectionSnapshot()) {
      try {
        events.push(this.frames.whole(event));
      } catch (error) {
        this.onError(error);
      }
    }
    return events;
  }

  close(): void {
    this.subscribers.clear();
    this.detach?.();
    this.detach = undefined;
    this.frames = new InspectionFrames();
  }

  private relay(event: InspectionEvent): void {
    let frames: string[];
    try {
      frames = this.frames.frames(event);
    } catch (error) {
      this.onError(error);
      return;
    }
    for (const json of frames) for (const subscriber of [...this.subscribers]) subscriber(json);
  }
}
