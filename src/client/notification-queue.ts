/*
 * An async iterable fed by pushes: what a subscription's notifications become on the client.
 * end() finishes the iteration after what was already pushed; fail() does so with an error
 * (the connection closed), which the consumer's for-await sees once the buffer is empty.
 */
export class NotificationQueue<T> implements AsyncIterable<T> {
  private readonly buffer: T[] = [];
  private wake: (() => void) | undefined;
  private ended = false;
  private failure: Error | undefined;

  push(item: T): void {
    if (this.ended) return;
    this.buffer.push(item);
    this.wake?.();
  }

  end(): void {
    this.ended = true;
    this.wake?.();
  }

  fail(error: Error): void {
    if (this.ended) return;
    this.failure = error;
    this.end();
  }

  get isEnded(): boolean {
    return this.ended;
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return {
      next: async (): Promise<IteratorResult<T>> => {
        for (;;) {
          if (this.buffer.length > 0) return { value: this.buffer.shift()!, done: false };
          if (this.failure) {
            const failure = this.failure;
            this.failure = undefined;
            throw failure;
          }
          if (this.ended) return { value: undefined, done: true };
          await new Promise<void>((resolve) => (this.wake = resolve));
          this.wake = undefined;
        }
      },
      return: async (): Promise<IteratorResult<T>> => {
        this.end();
        this.buffer.length = 0;
        return { value: undefined, done: true };
      },
    };
  }
}
