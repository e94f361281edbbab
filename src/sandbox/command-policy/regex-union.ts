/*
 * A long alternation written as several short regular-expression literals: the lists of
 * programs, functions and paths the policy knows stay readable (and under the line length),
 * and each piece is still a checked literal rather than a string with doubled backslashes.
 */

export interface RegexUnionOptions {
  /** What must come before the alternation (e.g. /^\/dev\//). */
  before?: RegExp;
  /** What must come after it (e.g. /$/). */
  after?: RegExp;
  flags?: string;
}

/** `before(?:a|b|…)after`: matches where `before`, then any of `parts`, then `after` match. */
export function regexUnion(parts: readonly RegExp[], { before, after, flags = '' }: RegexUnionOptions = {}): RegExp {
  const alternation = parts.map((part) => part.source).join('|');
  return new RegExp(`${before?.source ?? ''}(?:${alternation})${after?.source ?? ''}`, flags);
}
