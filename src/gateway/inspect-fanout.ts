/*
 * One engine inspection listener for all `inspect.subscribe` subscriptions of a gateway:
 * each InspectionEvent is serialized once and handed to every subscriber as JSON text.
 * The engine builds inspection events only while someone listens, so the listener is
 * attached with the first subscriber and detached with the last. A new subscriber first
 * gets the live actors as they are (current()), so a page opened mid-run shows them at once.
 */
import type { InspectionEvent } from 'xstate';
import type { GatewayEngine } from './method-handlers.js';
import { serializeInspectionEvent } from './inspect-serialize.js';

export type InspectSubscriber = (eventJson: string) => void;

export class InspectFanout {
  private readonly subscribers = new Set<InspectSubscriber>();
  private detach: (() => void) | undefined;

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
        events.push(JSON.stringify(serializeInspectionEvent(event)));
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
  }

  private relay(event: InspectionEvent): void {
    let json: string;
    try {
      json = JSON.stringify(serializeInspectionEvent(event));
    } catch (error) {
      this.onError(error);
      return;
    }
    for (const subscriber of [...this.subscribers]) subscriber(json);
  }
}
