/*
 * A provider's failure: a value with a code the run fails with (`model_error`, `rate_limited`,
 * `content_filtered`, `aborted`) and, when the server answered, the HTTP status it answered with.
 */
export type ModelErrorCode = 'model_error' | 'rate_limited' | 'content_filtered' | 'aborted';

export class ModelError extends Error {
  override readonly name = 'ModelError';
  constructor(
    readonly code: ModelErrorCode,
    message: string,
    /** HTTP status of the failed response, when there was one. */
    readonly status?: number,
  ) {
    super(message);
  }
}

export function abortedError(): ModelError {
  return new ModelError('aborted', 'the model request was aborted');
}
