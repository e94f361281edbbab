/* Bounded label values, and where an OTLP endpoint sends the traces: rules as tables. */
import { describe, expect, it } from 'vitest';
import { LabelBudget, OTHER } from '../../src/telemetry/label-budget.js';
import { tracesUrlOf } from '../../src/telemetry/index.js';

describe('LabelBudget', () => {
  it('admits the first values up to its limit, keeps them, and calls every later one "other"', () => {
    const budget = new LabelBudget(2);
    expect(['a', 'b', 'a', 'c', 'b', 'd'].map((value) => budget.of(value))).toEqual(['a', 'b', 'a', OTHER, 'b', OTHER]);
  });
});

describe('tracesUrlOf', () => {
  it.each([
    ['http://localhost:4318', 'http://localhost:4318/v1/traces'],
    ['http://localhost:4318/', 'http://localhost:4318/v1/traces'],
    ['https://collector.example/otlp', 'https://collector.example/otlp/v1/traces'],
    ['http://localhost:4318/v1/traces', 'http://localhost:4318/v1/traces'],
  ])('%s → %s', (endpoint, url) => {
    expect(tracesUrlOf(endpoint)).toBe(url);
  });
});
