/**
 * Canonical JSON: the text `JSON.stringify` would produce with every object's keys sorted, so
 * that equal values give equal strings (duplicate tool calls, approval fingerprints).
 */

type Json = string | undefined;

function hasToJson(value: object): value is { toJSON: (key: string) => unknown } {
  return typeof (value as { toJSON?: unknown }).toJSON === 'function';
}

function write(input: unknown, key: string, ancestors: Set<object>): Json {
  const value = typeof input === 'object' && input !== null && hasToJson(input) ? input.toJSON(key) : input;
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
      return Number.isFinite(value) ? JSON.stringify(value) : 'null';
    case 'boolean':
      return value ? 'true' : 'false';
    case 'bigint':
      throw new TypeError('canonicalJson: a BigInt has no JSON form; convert it to a string or number first');
    case 'object':
      break;
    default:
      // undefined, functions and symbols have no JSON form: dropped from objects, null in arrays.
      return undefined;
  }
  if (value === null) return 'null';
  if (ancestors.has(value)) throw new TypeError('canonicalJson: the value contains a cycle');
  ancestors.add(value);
  let text: string;
  if (Array.isArray(value)) {
    text = `[${value.map((item: unknown, index) => write(item, String(index), ancestors) ?? 'null').join(',')}]`;
  } else {
    const record = value as Record<string, unknown>;
    const members: string[] = [];
    for (const name of Object.keys(record).sort()) {
      const member = write(record[name], name, ancestors);
      if (member !== undefined) members.push(`${JSON.stringify(name)}:${member}`);
    }
    text = `{${members.join(',')}}`;
  }
  ancestors.delete(value);
  return text;
}

/** JSON text with object keys sorted recursively; a value with no JSON form gives `null`. */
export function canonicalJson(value: unknown): string {
  return write(value, '', new Set()) ?? 'null';
}
