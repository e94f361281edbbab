/*
 * A JSON-safe, size-capped copy of any value: what goes on the wire when a value might hold
 * a BigInt, a cycle, a function or simply too much (inspection contexts, a tool's output that
 * JSON.stringify refuses). Nothing in the copy can make JSON.stringify throw or grow without
 * bound. jsonSafeText writes the copy's JSON text straight away, for the hot paths that only
 * want the text (the inspection stream): the same caps, no copy built and walked again.
 */

export interface JsonSafeLimits {
  /** Nesting depth kept; deeper values become "…". */
  depth: number;
  /** Items kept per array (or Set). */
  items: number;
  /** Keys kept per object (or Map). */
  keys: number;
  /** Characters kept per string. */
  chars: number;
}

/** Returns the stand-in for an object of its own kind, or undefined to copy it as usual. */
export type SpecialCopy = (value: object) => unknown;

interface CopyState {
  limits: JsonSafeLimits;
  special: SpecialCopy | undefined;
  ancestors: Set<object>;
  /** Caps the whole copy, also of a structure that shares one object in many places. */
  nodesLeft: number;
}

export function jsonSafe(value: unknown, limits: JsonSafeLimits, special?: SpecialCopy): unknown {
  return copy(value, 0, { limits, special, ancestors: new Set(), nodesLeft: limits.items * limits.keys });
}

/** JSON.stringify(jsonSafe(value, limits, special)), in one pass. */
export function jsonSafeText(value: unknown, limits: JsonSafeLimits, special?: SpecialCopy): string | undefined {
  return write(value, 0, { limits, special, path: [], nodesLeft: limits.items * limits.keys });
}

function copy(value: unknown, depth: number, state: CopyState): unknown {
  const { limits } = state;
  switch (typeof value) {
    case 'string':
      return clip(value, limits.chars);
    case 'number':
      return Number.isFinite(value) ? value : String(value);
    case 'boolean':
      return value;
    case 'bigint':
      return value.toString();
    case 'undefined':
    case 'function':
    case 'symbol':
      return undefined;
  }
  if (value === null) return null;
  const object = value as object;
  const stand = state.special?.(object);
  if (stand !== undefined) return stand;
  if (object instanceof Error) return { name: object.name, message: clip(object.message, limits.chars) };
  if (object instanceof Date) return Number.isNaN(object.getTime()) ? null : object.toISOString();
  if (depth >= limits.depth || state.nodesLeft <= 0) return '…';
  if (state.ancestors.has(object)) return '[circular]';
  state.nodesLeft -= 1;
  state.ancestors.add(object);
  try {
    if (object instanceof Map)
      return copyEntries(
        [...object.entries()].map(([k, v]) => [keyText(k), v]),
        depth,
        state,
      );
    if (object instanceof Set) return copyItems([...object], depth, state);
    if (Array.isArray(object)) return copyItems(object, depth, state);
    return copyEntries(Object.entries(object), depth, state);
  } finally {
    state.ancestors.delete(object);
  }
}

function copyItems(items: unknown[], depth: number, state: CopyState): unknown[] {
  const { items: max } = state.limits;
  const out = items.slice(0, max).map((item) => copy(item, depth + 1, state) ?? null);
  if (items.length > max) out.push(`… ${items.length - max} more`);
  return out;
}

function copyEntries(entries: [string, unknown][], depth: number, state: CopyState): Record<string, unknown> {
  const kept: [string, unknown][] = [];
  for (const [key, item] of entries) {
    if (kept.length >= state.limits.keys) {
      kept.push(['…', `${entries.length - kept.length} more keys`]);
      break;
    }
    const safe = copy(item, depth + 1, state);
    if (safe !== undefined) kept.push([clip(key, state.limits.chars), safe]);
  }
  // fromEntries defines own properties: a "__proto__" key stays a key.
  return Object.fromEntries(kept);
}

/** A Map's key as an object key; a key String() refuses (an object without a prototype) by its kind. */
function keyText(key: unknown): string {
  try {
    return String(key);
  } catch {
    return Object.prototype.toString.call(key);
  }
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/*
 * The text twin of copy() above: each step the same, its result written as JSON. The objects
 * being written are a path no longer than the depth cap, so an array finds a cycle as well
 * as a Set, for less.
 */

interface WriteState extends Omit<CopyState, 'ancestors'> {
  path: object[];
}

function write(value: unknown, depth: number, state: WriteState): string | undefined {
  const { limits } = state;
  switch (typeof value) {
    case 'string':
      return JSON.stringify(clip(value, limits.chars));
    case 'number':
      return Number.isFinite(value) ? String(value) : JSON.stringify(String(value));
    case 'boolean':
      return value ? 'true' : 'false';
    case 'bigint':
      return JSON.stringify(value.toString());
    case 'undefined':
    case 'function':
    case 'symbol':
      return undefined;
  }
  if (value === null) return 'null';
  const object = value as object;
  const stand = state.special?.(object);
  if (stand !== undefined) return JSON.stringify(stand);
  // Most values are plain objects and arrays: they skip the questions only other objects need.
  const plain = Array.isArray(object) || Object.getPrototypeOf(object) === Object.prototype;
  if (!plain && object instanceof Error)
    return JSON.stringify({ name: object.name, message: clip(object.message, limits.chars) });
  if (!plain && object instanceof Date)
    return Number.isNaN(object.getTime()) ? 'null' : JSON.stringify(object.toISOString());
  if (depth >= limits.depth || state.nodesLeft <= 0) return '"…"';
  if (state.path.includes(object)) return '"[circular]"';
  state.nodesLeft -= 1;
  state.path.push(object);
  try {
    if (plain)
      return Array.isArray(object)
        ? writeItems(object, depth, state)
        : writeMembers(Object.keys(object), undefined, object as Record<string, unknown>, depth, state);
    if (object instanceof Map) {
      const keys: string[] = [];
      const values: unknown[] = [];
      for (const [key, item] of object) {
        keys.push(keyText(key));
        values.push(item);
      }
      return writeMembers(keys, values, undefined, depth, state);
    }
    if (object instanceof Set) return writeItems([...object], depth, state);
    if (Array.isArray(object)) return writeItems(object, depth, state);
    return writeMembers(Object.keys(object), undefined, object as Record<string, unknown>, depth, state);
  } finally {
    state.path.pop();
  }
}

function writeItems(items: unknown[], depth: number, state: WriteState): string {
  const { items: max } = state.limits;
  const kept = Math.min(items.length, max);
  let text = '[';
  for (let i = 0; i < kept; i++) text += `${i > 0 ? ',' : ''}${write(items[i], depth + 1, state) ?? 'null'}`;
  if (items.length > max) text += `${kept > 0 ? ',' : ''}${JSON.stringify(`… ${items.length - max} more`)}`;
  return `${text}]`;
}

/** An object's members, its values either in `values` (a Map's) or read from `record` by key. */
function writeMembers(
  keys: string[],
  values: unknown[] | undefined,
  record: Record<string, unknown> | undefined,
  depth: number,
  state: WriteState,
): string {
  let text = '{';
  let kept = 0;
  for (let i = 0; i < keys.length; i++) {
    if (kept >= state.limits.keys) {
      text += `${kept > 0 ? ',' : ''}"…":${JSON.stringify(`${keys.length - kept} more keys`)}`;
      break;
    }
    const key = keys[i]!;
    const safe = write(values ? values[i] : record![key], depth + 1, state);
    if (safe === undefined) continue;
    text += `${kept > 0 ? ',' : ''}${quoteName(clip(key, state.limits.chars))}:${safe}`;
    kept += 1;
  }
  // A key met twice (two long keys clipped alike) reads back as fromEntries keeps it: the last value.
  return `${text}}`;
}

/**
 * A name as a JSON string, quoted once: the keys of objects and the types of events that go
 * on the wire over and over are a few dozen names. Bounded in case they are not.
 */
const quotedNames = new Map<string, string>();
const QUOTED_NAMES_KEPT = 1024;

export function quoteName(name: string): string {
  let quoted = quotedNames.get(name);
  if (quoted === undefined) {
    if (quotedNames.size >= QUOTED_NAMES_KEPT) quotedNames.clear();
    quoted = JSON.stringify(name);
    quotedNames.set(name, quoted);
  }
  return quoted;
}
