/** Lexical path normalization (docs/claims.md): the same answer on every platform, and no I/O. */

const SEPARATOR = /[\\/]/;

/**
 * Normalizes `raw` lexically, or returns `undefined` when it is blank.
 *
 * Each component is trimmed as well as the whole string: otherwise `'a /'` would become `'a '`
 * and then `'a'`, and a path normalized twice could stop overlapping itself.
 */
export function normalizePath(raw: string): string | undefined {
  const trimmed = raw.trim();
  if (trimmed === '') return undefined;
  const absolute = trimmed.startsWith('/') || trimmed.startsWith('\\');
  const components: string[] = [];
  for (const part of trimmed.split(SEPARATOR)) {
    const component = part.trim();
    if (component === '' || component === '.') continue;
    if (component !== '..') {
      components.push(component);
      continue;
    }
    const previous = components.at(-1);
    if (previous !== undefined && previous !== '..') components.pop();
    // Above the root of an absolute path there is nothing to climb to; a relative path keeps it.
    else if (!absolute) components.push('..');
  }
  if (absolute) return '/' + components.join('/');
  return components.length === 0 ? '.' : components.join('/');
}
