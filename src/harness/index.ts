export { Conversations } from './conversation.js';
export { runModelTurn } from './model-turn.js';
export type { ModelTurnArgs } from './model-turn.js';
export { serialDispatch, executeCall } from './dispatch.js';
export type { Dispatch, DispatchContext, ToolCallResult } from './dispatch.js';
