/*
 * The file store's JSON documents as lowdb documents: every file the store keeps whole (a run
 * or steer record, lanes.json, open-runs.json, open-steers.json, grants.json, the store marker,
 * a log segment) is a `Low<T>` over PrivateJsonFile, this adapter of ours. lowdb's own writer
 * (steno) cannot create a file 0600 nor fsync it; this one reads through readJsonFile (checked
 * against the store's schema, a damaged file reported, never half-used) and writes through
 * PrivateTextFile (a temp file created 0600, fsynced with its directory when `[store] fsync`
 * is on, renamed into place) or hands the text to the checkpoint thread. The write-ahead
 * journal is not a document: it is appended to, never rewritten whole.
 */
import { Low, type Adapter } from 'lowdb';
import type { z } from 'zod';
import { PrivateTextFile } from './private-file.js';
import { readJsonFile } from './read-json-file.js';

/** A document's text as the store has always written it: JSON indented by two, and a newline. */
export const indentedJson = (data: unknown): string => `${JSON.stringify(data, null, 2)}\n`;

export interface PrivateJsonFileOptions<T> {
  /**
   * What read() accepts; a file that does not fit is a corrupt_file error.
   * @default none: read() throws (a file only written)
   */
  schema?: z.ZodType<T>;
  /**
   * fsync the file and its directory on each write (`[store] fsync`).
   * @default false
   */
  sync?: boolean;
  /**
   * The document as text.
   * @default indentedJson
   */
  format?: (data: T) => string;
  /**
   * Writes the text elsewhere than PrivateTextFile (the checkpoint thread, a coalesced write).
   * @default none: written through PrivateTextFile
   */
  writeText?: (text: string) => Promise<void>;
}

export class PrivateJsonFile<T> implements Adapter<T> {
  private readonly file: PrivateTextFile;

  constructor(
    readonly path: string,
    private readonly options: PrivateJsonFileOptions<T> = {},
  ) {
    this.file = new PrivateTextFile(path, options.sync === true);
  }

  /** The document, or null if there is no such file. */
  async read(): Promise<T | null> {
    const schema = this.options.schema;
    if (!schema) throw new TypeError(`${this.path}: a document read needs its schema`);
    return (await readJsonFile(this.path, schema)) ?? null;
  }

  write(data: T): Promise<void> {
    const text = (this.options.format ?? indentedJson)(data);
    return this.options.writeText ? this.options.writeText(text) : this.file.write(text);
  }
}

/** A lowdb document over a private file; its data is null until read() finds the file. */
export function jsonDocument<T>(path: string, options: PrivateJsonFileOptions<T> = {}): Low<T | null> {
  return new Low<T | null>(new PrivateJsonFile<T>(path, options) as Adapter<T | null>, null);
}

/** The document at `path` read through lowdb, or undefined if there is no such file. */
export async function readJsonDocument<T>(path: string, schema: z.ZodType<T>): Promise<T | undefined> {
  const document = jsonDocument(path, { schema });
  await document.read();
  return document.data ?? undefined;
}

/** Replaces the document at `path` with `data` through lowdb. */
export async function writeJsonDocument<T>(
  path: string,
  data: T,
  options: PrivateJsonFileOptions<T> = {},
): Promise<void> {
  const document = jsonDocument(path, options);
  document.data = data;
  await document.write();
}
