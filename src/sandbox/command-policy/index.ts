export { evaluateCommand, formatVerdict, TOO_COMPLEX_RULE, UNPARSEABLE_RULE } from './evaluate.js';
export type { CommandAction, CommandEnforcement, CommandPolicy, CommandVerdict } from './evaluate.js';
export type { OperatorRule } from './operator-rules.js';
export { FLOOR_RULES, TUNABLE_RULES } from './rules.js';
export type { CommandRule } from './rules.js';
