/*
 * The file store's quarantine: a damaged file found while the store opens (replaying the
 * journal, repairing after a crash) is moved aside to `quarantine/<its path>` instead of
 * stopping the store, and the run, session or steer it belonged to answers `corrupt_file`
 * from then on; every other run and session carries on. The list is kept in
 * `quarantine/quarantined.json`: to take one back, put a good copy of its file in place and
 * remove its entry (with the store closed).
 */
import { mkdir, rename } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { z } from 'zod';
import { PRIVATE_DIR_MODE } from './private-file.js';
import { readJsonDocument, writeJsonDocument } from './json-document.js';
import { isStoreError, StoreError } from './store-error.js';

export type QuarantineKind = 'run' | 'session' | 'steer' | 'file';

const QuarantineEntrySchema = z.object({
  kind: z.enum(['run', 'session', 'steer', 'file']),
  /** The run, session or steer id; for a file of no one (a runs-index segment, a global file), its path. */
  id: z.string(),
  /** Where the file was, relative to the store's directory. */
  file: z.string(),
  /** Where it is now, relative to the store's directory (absent: it could not be moved). */
  movedTo: z.string().optional(),
  reason: z.string(),
  at: z.string(),
});
export type QuarantineEntry = z.infer<typeof QuarantineEntrySchema>;
const QuarantineFile = z.object({ entries: z.array(QuarantineEntrySchema) });

export class Quarantine {
  /** Reads the list; a damaged list is itself set aside, and the store starts with an empty one. */
  static async open(root: string, onDamaged: (entry: QuarantineEntry) => void): Promise<Quarantine> {
    const quarantine = new Quarantine(root, onDamaged);
    try {
      for (const entry of (await readJsonDocument(quarantine.listPath, QuarantineFile))?.entries ?? [])
        quarantine.entries.set(keyOf(entry.kind, entry.id), entry);
    } catch (error) {
      await quarantine.isolate('file', quarantine.listPath, error);
    }
    return quarantine;
  }

  private readonly entries = new Map<string, QuarantineEntry>();

  private constructor(
    private readonly root: string,
    private readonly onDamaged: (entry: QuarantineEntry) => void,
  ) {}

  private get listPath(): string {
    return join(this.root, 'quarantine', 'quarantined.json');
  }

  has(kind: QuarantineKind, id: string): boolean {
    return this.entries.has(keyOf(kind, id));
  }

  /** Throws the `corrupt_file` error the id answers with, if it is quarantined. */
  check(kind: QuarantineKind, id: string): void {
    const entry = this.entries.get(keyOf(kind, id));
    if (!entry) return;
    throw new StoreError(
      'corrupt_file',
      `the ${kind} "${id}" is quarantined: its file ${entry.file} was damaged (${entry.reason})` +
        `${entry.movedTo ? ` and was moved to ${entry.movedTo}` : ''}; restore the file from a backup ` +
        `and remove its entry from quarantine/quarantined.json, or leave it`,
      {
        path: join(this.root, entry.file),
        [kind === 'run' ? 'runId' : kind === 'session' ? 'sessionId' : kind === 'steer' ? 'steerId' : 'file']: id,
      },
    );
  }

  list(): QuarantineEntry[] {
    return [...this.entries.values()];
  }

  /**
   * If `error` is a damaged file (a `corrupt_file` StoreError), moves the file aside and
   * quarantines `id`; resolves to whether it did. Any other error is not this one's business.
   */
  async isolate(kind: QuarantineKind, id: string, error: unknown): Promise<boolean> {
    if (!isStoreError(error) || error.code !== 'corrupt_file' || error.details?.path === undefined) return false;
    const path = error.details.path;
    const file = relative(this.root, path);
    const entry: QuarantineEntry = { kind, id, file, reason: reasonOf(error.message), at: new Date().toISOString() };
    if (!file.startsWith('quarantine')) {
      const target = join(this.root, 'quarantine', `${file}.${Date.now()}`);
      try {
        await mkdir(dirname(target), { recursive: true, mode: PRIVATE_DIR_MODE });
        await rename(path, target);
        entry.movedTo = relative(this.root, target);
      } catch {
        // Left in place (a full or read-only disk): the id is quarantined all the same.
      }
    }
    this.entries.set(keyOf(kind, id), entry);
    this.onDamaged(entry);
    if (kind !== 'file') await this.save();
    return true;
  }

  private async save(): Promise<void> {
    try {
      await writeJsonDocument(this.listPath, { entries: this.list().filter((e) => e.kind !== 'file') });
    } catch {
      // A full disk: kept in memory; the file's move (if it happened) already keeps it out of use.
    }
  }
}

function keyOf(kind: QuarantineKind, id: string): string {
  return `${kind}\u0000${id}`;
}

/** The part of a corrupt_file message that says what is wrong, without the advice. */
function reasonOf(message: string): string {
  const match = /(is not valid JSON \(.*?\)|does not hold what the store wrote \(.*?\))/.exec(message);
  return match?.[1] ?? message.slice(0, 200);
}
