/*
 * The command policy verdict (docs/command-policy.md): `block` refuses the call before anyone is
 * asked, `warn` feeds the approval decision, `allow` lets it through. Precedence, strongest first:
 *
 *   1. the floor (`floor:*`): always `block`, even with enforcement `off`; nothing lifts it;
 *   2. an operator `block` rule, tried on every reading: the whole line as written,
 *      de-obfuscated and without quotes, every shell text inside it, every pipeline, every
 *      command through its wrappers;
 *   3. `unparseable` (`warn`, never exempted): the shell grammar could not parse the command, so
 *      bash would refuse it or read it otherwise than the policy can; nothing below is judged
 *      on a tree the grammar could not build;
 *   3b. an operator `allow` rule exempts the simple command or the pipeline it matches (not the
 *      rest of a `;`/`&&` list) from 4 and 6;
 *   4. the tunable rules, at the enforcement's action (`block` or `warn`; `off` skips them);
 *   5. `too-complex` (`warn`, never exempted): part of the command was too long or too deeply
 *      nested to read;
 *   6. an operator `warn` rule, tried on each pipeline and each command;
 *   7. otherwise `allow` (naming the `allow` rule when one exempted something).
 *
 * Where 4, 5 and 6 all match, the strictest action wins and the earliest of them names it.
 */
import type { Config } from '../../config/index.js';
import {
  analyzeCommand,
  type CommandAnalysis,
  type CommandSite,
  type PipelineSite,
  type SiteRedirect,
} from './command-sites.js';
import { renderPipeline } from './shell-script.js';
import { compileOperatorRules, firstMatching, type CompiledOperatorRule, type OperatorRule } from './operator-rules.js';
import { FLOOR_RULES, TUNABLE_RULES } from './rules.js';

export type CommandAction = 'allow' | 'warn' | 'block';
export type CommandEnforcement = Config['sandbox']['command_policy']['enforcement'];

/** `[sandbox.command_policy]`; every key is optional (enforcement `warn`, no rules). */
export interface CommandPolicy {
  readonly enforcement?: CommandEnforcement;
  readonly rules?: readonly OperatorRule[];
}

export interface CommandVerdict {
  readonly action: CommandAction;
  /** The rule that decided: `floor:rm-root`, `sudo`, `too-complex`, or an operator rule's name. */
  readonly rule?: string;
  readonly reason?: string;
  /** Set on hard-floor blocks, which nothing lifts. */
  readonly floor?: boolean;
}

export const TOO_COMPLEX_RULE = 'too-complex';
const TOO_COMPLEX_REASON = 'the command is too long or too deeply nested to check, so a person should look at it';
export const UNPARSEABLE_RULE = 'unparseable';
const UNPARSEABLE_REASON =
  'the shell grammar cannot parse the command, so the policy cannot tell what bash would run; a person should look at it';
const NO_RULES: readonly OperatorRule[] = [];

export function evaluateCommand(command: string, policy: CommandPolicy = {}): CommandVerdict {
  const analysis = analyzeCommand(command);

  for (const rule of FLOOR_RULES) {
    if (analysis.commands.some(rule.matches))
      return { action: 'block', rule: rule.name, reason: rule.reason, floor: true };
  }

  const operatorRules = compileOperatorRules(policy.rules ?? NO_RULES);
  const readings = new OperatorReadings();
  if (operatorRules.some((rule) => rule.action === 'block')) {
    const blockRule = firstMatching(operatorRules, 'block', readings.all(analysis));
    if (blockRule) return operatorVerdict(blockRule);
  }

  // Past the floor and the block rules, a tree the grammar could not build is not evidence.
  if (analysis.unparseable) return { action: 'warn', rule: UNPARSEABLE_RULE, reason: UNPARSEABLE_REASON };

  const exemptions = new Exemptions(operatorRules, readings);
  const enforcement = policy.enforcement ?? 'warn';
  let lifted: CompiledOperatorRule | undefined;
  if (enforcement !== 'off') {
    for (const rule of TUNABLE_RULES) {
      for (const site of analysis.commands) {
        if (!rule.matches(site)) continue;
        const allow = exemptions.of(site) ?? exemptions.of(site.pipeline);
        if (!allow) return { action: enforcement, rule: rule.name, reason: rule.reason };
        lifted ??= allow;
      }
    }
  }

  if (analysis.tooComplex) return { action: 'warn', rule: TOO_COMPLEX_RULE, reason: TOO_COMPLEX_REASON };

  const units: readonly Unit[] = [...analysis.pipelines, ...analysis.commands];
  for (const rule of operatorRules) {
    if (rule.action !== 'warn') continue;
    for (const unit of units) {
      if (!readings.of(unit).some((text) => rule.pattern.test(text))) continue;
      const allow = exemptions.of(unit);
      if (!allow) return operatorVerdict(rule);
      lifted ??= allow;
    }
  }

  return lifted ? operatorVerdict(lifted) : { action: 'allow' };
}

/** A verdict as a sentence for error messages: "blocked by floor:rm-root: removes the root filesystem". */
export function formatVerdict(verdict: CommandVerdict): string {
  const verb = verdict.action === 'block' ? 'blocked' : verdict.action === 'warn' ? 'flagged' : 'allowed';
  if (verdict.rule === undefined) return verb;
  return verdict.reason === undefined ? `${verb} by ${verdict.rule}` : `${verb} by ${verdict.rule}: ${verdict.reason}`;
}

function operatorVerdict(rule: CompiledOperatorRule): CommandVerdict {
  return { action: rule.action, rule: rule.name, reason: `matches the operator rule /${rule.pattern.source}/` };
}

/** A simple command or a pipeline: what an operator `warn` or `allow` rule judges. */
type Unit = CommandSite | PipelineSite;

/**
 * The readings operator rules see, rendered when first asked for: a command's views joined
 * with spaces (`sudo -u ci git push -f`, `git push -f`) with its redirections; a pipeline
 * without quotes (`curl -sSf https://sh.rustup.rs | sh`); and for `block` rules also the
 * whole command line in its readings and every shell text found in it.
 */
class OperatorReadings {
  private readonly memo = new Map<Unit, readonly string[]>();

  of(unit: Unit): readonly string[] {
    let texts = this.memo.get(unit);
    if (texts === undefined) {
      texts = 'views' in unit ? commandReadings(unit) : [renderPipeline(unit.pipeline)];
      this.memo.set(unit, texts);
    }
    return texts;
  }

  all(analysis: CommandAnalysis): string[] {
    return [
      ...analysis.wholeTexts(),
      ...analysis.pipelines.flatMap((p) => this.of(p)),
      ...analysis.commands.flatMap((c) => this.of(c)),
    ];
  }
}

function commandReadings(site: CommandSite): string[] {
  const redirects = renderRedirects(site.redirects);
  return site.views.map((view) => view.argv.join(' ') + redirects);
}

function renderRedirects(redirects: readonly SiteRedirect[]): string {
  return redirects.map((r) => ` ${r.fd ?? ''}${r.op}${r.target !== undefined ? ` ${r.target}` : ''}`).join('');
}

/** Which operator `allow` rule, if any, matches a command or a pipeline; memoized per evaluation. */
class Exemptions {
  private readonly allowRules: readonly CompiledOperatorRule[];
  private readonly memo = new Map<Unit, CompiledOperatorRule | undefined>();

  constructor(
    rules: readonly CompiledOperatorRule[],
    private readonly readings: OperatorReadings,
  ) {
    this.allowRules = rules.filter((rule) => rule.action === 'allow');
  }

  of(unit: Unit): CompiledOperatorRule | undefined {
    if (this.allowRules.length === 0) return undefined;
    if (!this.memo.has(unit)) this.memo.set(unit, firstMatching(this.allowRules, 'allow', this.readings.of(unit)));
    return this.memo.get(unit);
  }
}
