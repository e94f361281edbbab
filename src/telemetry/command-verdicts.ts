/*
 * Command-policy verdicts by action and rule, counted from the engine observer (the event log
 * shows only the blocks, as failed calls). Rule names are bounded: the built-in rules are a
 * fixed set, and operator rules come from the config.
 */
import { Counter, type Registry } from 'prom-client';
import type { EngineObserver } from '../engine/index.js';
import { LabelBudget } from './label-budget.js';

export function commandVerdictCounter(registry: Registry): EngineObserver['commandJudged'] {
  const verdicts = new Counter({
    name: 'switchyard_command_verdicts_total',
    help: 'Command-policy verdicts on tool calls that run commands, by action (allow, warn, block) and the rule that decided ("none" when no rule matched).',
    labelNames: ['action', 'rule'],
    registers: [registry],
  });
  const rules = new LabelBudget(200);
  return ({ verdict }) => verdicts.inc({ action: verdict.action, rule: rules.of(verdict.rule ?? 'none') });
}
