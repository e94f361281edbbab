/*
 * One owner for each piece of a run's state (docs/architecture.md, "A run's state"): a run's
 * public RunStatus is written only by RunLedger. The type says so (RunHandle.status is a
 * ReadonlyRunStatus; the ledger's `own` is the one cast back to a writable handle); this test
 * says it for every line of src/, so a cast elsewhere cannot slip by either.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = normalize(join(dirname(fileURLToPath(import.meta.url)), '../..'));
const LEDGER = 'src/engine/run-ledger.ts';

function sourceFiles(dir: string): string[] {
  return readdirSync(join(root, dir)).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(join(root, path)).isDirectory()) return sourceFiles(path);
    return /\.ts$/.test(name) ? [path] : [];
  });
}

const FIELDS =
  'state|startedAt|endedAt|output|error|reason|queuedFor|usage|turns|toolCalls|carries|denied|position|createdAt';
/** A write of a status field: assignment, `??=`, a push onto `denied`, a delete, or the whole status replaced. */
const STATUS_WRITE = new RegExp(
  [
    `\\bstatus\\.(?:${FIELDS})\\s*(?:=(?!=)|\\?\\?=|\\+=)`,
    `\\bstatus\\.denied\\)?\\??\\.(?:push|splice|unshift)\\(`,
    `delete\\s+[\\w.]*\\bstatus\\.`,
    `\\.status\\s*=(?!=)`,
    `as\\s+(?:unknown\\s+as\\s+)?(?:RunStatus|WritableHandle)\\b`,
  ].join('|'),
);

function writesIn(file: string): string[] {
  return readFileSync(join(root, file), 'utf8')
    .split('\n')
    .flatMap((line, i) => (STATUS_WRITE.test(line) ? [`${file}:${i + 1}: ${line.trim()}`] : []));
}

describe('a run status has one writer', () => {
  it('finds the writes it looks for (in the ledger)', () => {
    expect(writesIn(LEDGER).length).toBeGreaterThan(10);
  });

  it('nothing in src/ but the run ledger writes a RunStatus', () => {
    const files = sourceFiles('src').filter((f) => f !== LEDGER);
    expect(files.length).toBeGreaterThan(100);
    expect(files.flatMap(writesIn)).toEqual([]);
  });
});
