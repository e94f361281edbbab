/*
 * Reads one of the store's JSON files, checked against the shape the store relies on. A file
 * that does not parse or fit is reported with its path and what to do, never half-used.
 */
import { readFile } from 'node:fs/promises';
import type { z } from 'zod';
import { StoreError } from './store-error.js';

/** The file's content, or undefined if there is no such file. */
export async function readJsonFile<T>(path: string, schema: z.ZodType<T>): Promise<T | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined;
    throw error;
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw corruptFile(path, `is not valid JSON (${error instanceof Error ? error.message : String(error)})`);
  }
  const result = schema.safeParse(value);
  if (!result.success) {
    const issue = result.error.issues[0];
    const where = issue && issue.path.length > 0 ? ` at ${issue.path.join('.')}` : '';
    throw corruptFile(path, `does not hold what the store wrote (${issue?.message ?? 'invalid'}${where})`);
  }
  return result.data;
}

export function errorCode(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string'
    ? error.code
    : undefined;
}

function corruptFile(path: string, what: string): StoreError {
  return new StoreError(
    'corrupt_file',
    `${path} ${what}. The store replaces files atomically, so it was damaged outside Switchyard ` +
      '(disk fault, manual edit, partial copy): restore it from a backup, or move it aside to drop what it held.',
    { path },
  );
}
