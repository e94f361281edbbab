/*
 * The fingerprint of a concrete action (README, "Approval, command policy and the sandbox"): grants
 * are keyed on it, so "allow for this session" covers exactly the call the person saw — same tool,
 * same canonical arguments.
 */
import { createHash } from 'node:crypto';
import { canonicalJson } from '../concurrency/index.js';

/** Hex sha256 of the tool name and the canonical JSON of its arguments (key order does not matter). */
export function actionFingerprint(tool: string, args: unknown): string {
  return createHash('sha256').update(tool).update('\u0000').update(canonicalJson(args)).digest('hex');
}
