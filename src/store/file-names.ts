/*
 * File names for arbitrary ids (session ids come from clients): a readable, sanitized prefix
 * plus a hash of the whole id, so `../../etc`, unicode or a 500-character id all become one
 * short, safe path component, and two ids never share a file. A two-character shard keeps
 * directories small.
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';

const PREFIX_LENGTH = 40;
/** Paths of recently used ids: a run's id is turned into a path at every save and append. */
const recent = new Map<string, string>();
const RECENT_LIMIT = 4096;

/** `<shard>/<prefix>-<hash>`: a relative path of two safe components. */
export function idPath(id: string): string {
  let path = recent.get(id);
  if (path === undefined) {
    const hash = createHash('sha256').update(id).digest('hex');
    const prefix = id.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, PREFIX_LENGTH);
    path = join(hash.slice(0, 2), `${prefix}-${hash.slice(0, 24)}`);
    if (recent.size >= RECENT_LIMIT) recent.clear();
    recent.set(id, path);
  }
  return path;
}

const SEGMENT_NAME = /^(\d+)\.json$/;

/** A segment file is named by the key of its first item, zero-padded so names sort. */
export function segmentFileName(firstKey: number): string {
  return `${String(firstKey).padStart(12, '0')}.json`;
}

export function segmentKeyOf(fileName: string): number | undefined {
  const match = SEGMENT_NAME.exec(fileName);
  return match ? Number(match[1]) : undefined;
}
