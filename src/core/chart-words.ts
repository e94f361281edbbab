/*
 * The statecharts' shared words (machines/vocabulary.ts), re-exported so that src/ speaks
 * them from its floor: one CodedError, one errorOf, one ClaimBlock.
 */
export { errorOf } from '../../machines/vocabulary.js';
export type { ClaimBlock, ClaimHolder, CodedError } from '../../machines/vocabulary.js';
