import { describe, expect, it } from 'vitest';
import { evaluateCommand, UNPARSEABLE_RULE } from '../../src/sandbox/index.js';
import { CORPUS, type CorpusClass } from './command-policy.corpus.js';

/*
 * The corpus gathered from peers' rules and tests (test/sandbox/command-policy.corpus.ts, each
 * group with its source), as a table: floor rows block under every enforcement, must-not-allow
 * rows are at least `warn` under the default enforcement and name their rule, benign rows pass.
 */

const rows = (kind: CorpusClass) =>
  CORPUS.filter((row) => row.class === kind).map((row) => [row.command, row.rule ?? ''] as const);

describe('the corpus is large enough to mean something', () => {
  it('holds at least 300 cases across the three classes, none twice', () => {
    expect(CORPUS.length).toBeGreaterThanOrEqual(300);
    expect(new Set(CORPUS.map((row) => row.command)).size).toBe(CORPUS.length);
    for (const kind of ['floor', 'must-not-allow', 'benign'] as const)
      expect(rows(kind).length).toBeGreaterThanOrEqual(60);
  });
});

describe('floor rows block whatever the enforcement', () => {
  it.each(rows('floor'))('%j → %s', (command, rule) => {
    for (const enforcement of ['block', 'warn', 'off'] as const) {
      expect(evaluateCommand(command, { enforcement })).toMatchObject({ action: 'block', rule, floor: true });
    }
  });
});

describe('must-not-allow rows are never allowed without a person', () => {
  it.each(rows('must-not-allow'))('%j → %s', (command, rule) => {
    expect(evaluateCommand(command)).toMatchObject({ action: 'warn', rule });
    // A rule takes the enforcement's action; what the grammar cannot parse stays `warn`.
    expect(evaluateCommand(command, { enforcement: 'block' }).action).toBe(
      rule === UNPARSEABLE_RULE ? 'warn' : 'block',
    );
  });
});

describe('benign rows are allowed', () => {
  it.each(rows('benign'))('%j', (command) => {
    expect(evaluateCommand(command, { enforcement: 'block' })).toEqual({ action: 'allow' });
  });
});
