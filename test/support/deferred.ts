/*
 * A promise with its resolve and reject outside: the test decides when (and how) something
 * the code under test awaits finishes. (Promise.withResolvers, which Node 20 lacks.)
 */

export interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(error: unknown): void;
}

/** @example const gate = deferred<void>(); tool.execute = () => gate.promise; …; gate.resolve(); */
export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}
