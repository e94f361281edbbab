/*
 * Errors of the stores are values with codes, like the engine's: a caller can switch on
 * `code`, and the message says what happened to which file or key and what to do about it.
 */
export type StoreErrorCode =
  /** A file is not what the store wrote (bad JSON or shape). */
  | 'corrupt_file'
  /** Another process (or another open store in this one) uses the directory. */
  | 'store_locked'
  /** The directory holds data of another format or a newer version. */
  | 'unsupported_format'
  /** A write could not be completed (disk full, permissions); flush() retries once. */
  | 'write_failed'
  /** The store was closed. */
  | 'store_closed'
  /** The shared store (Redis) did not answer. */
  | 'unavailable'
  /** A write for a session carried a fencing token that is no longer the session's: another process owns it now. */
  | 'fenced';

export class StoreError extends Error {
  override readonly name = 'StoreError';
  constructor(
    readonly code: StoreErrorCode,
    message: string,
    /** The file, and the run, session or steer it belongs to when known. */
    readonly details?: {
      path?: string;
      cause?: unknown;
      runId?: string;
      sessionId?: string;
      steerId?: string;
      file?: string;
    },
  ) {
    super(message);
  }
}

export function isStoreError(error: unknown): error is StoreError {
  return error instanceof StoreError;
}
