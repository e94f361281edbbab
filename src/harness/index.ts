export { Conversations } from './conversation.js';
export { runModelTurn } from './model-turn.js';
export type { ModelTurnArgs } from './model-turn.js';
export { planBatch } from './batch-plan.js';
export type { BatchPlan, PlanOptions } from './batch-plan.js';
