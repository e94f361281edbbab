/*
 * Operator rules from `[[sandbox.command_policy.rules]] {name, pattern, action}`: each pattern
 * is a RegExp without flags, compiled once per rules array (a config reload brings a new
 * array) and tested against the readings of a command.
 */
import type { Config } from '../../config/index.js';

export type OperatorRule = Config['sandbox']['command_policy']['rules'][number];

export interface CompiledOperatorRule {
  readonly name: string;
  readonly action: OperatorRule['action'];
  readonly pattern: RegExp;
}

const compiled = new WeakMap<readonly OperatorRule[], readonly CompiledOperatorRule[]>();

/**
 * Throws when a pattern is not a valid regular expression: the config schema rejects such a
 * rule, so only a policy built by hand can get here, and silently dropping a `block` rule
 * would be worse than failing.
 */
export function compileOperatorRules(rules: readonly OperatorRule[]): readonly CompiledOperatorRule[] {
  const cached = compiled.get(rules);
  if (cached) return cached;
  const result = rules.map((rule) => {
    try {
      return { name: rule.name, action: rule.action, pattern: new RegExp(rule.pattern) };
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      throw new TypeError(
        `command policy rule "${rule.name}": pattern is not a valid regular expression (${why}); fix it in [[sandbox.command_policy.rules]]`,
      );
    }
  });
  compiled.set(rules, result);
  return result;
}

export function firstMatching(
  rules: readonly CompiledOperatorRule[],
  action: OperatorRule['action'],
  texts: readonly string[],
): CompiledOperatorRule | undefined {
  return rules.find((rule) => rule.action === action && texts.some((text) => rule.pattern.test(text)));
}
