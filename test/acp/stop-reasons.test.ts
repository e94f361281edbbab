/* A run's outcome as the stop reason of its prompt turn, or as an error answer. */
import { describe, expect, it } from 'vitest';
import { RequestError } from '@agentclientprotocol/sdk';
import { stopReasonOf } from '../../src/acp/stop-reasons.js';
import type { RunResult } from '../../src/engine/index.js';

describe('stopReasonOf', () => {
  it.each<[RunResult, string]>([
    [{ runId: 'r', state: 'completed', output: 'done' }, 'end_turn'],
    [
      {
        runId: 'r',
        state: 'completed',
        output: '',
        denied: [{ callId: 'c', tool: 't', code: 'approval_denied', message: 'no' }],
      },
      'end_turn',
    ],
    [{ runId: 'r', state: 'cancelled', reason: 'stopped' }, 'cancelled'],
    [{ runId: 'r', state: 'failed', error: { code: 'max_iterations', message: 'cap' } }, 'max_turn_requests'],
    [{ runId: 'r', state: 'failed', error: { code: 'model_truncated', message: 'length' } }, 'max_tokens'],
    [{ runId: 'r', state: 'failed', error: { code: 'content_filtered', message: 'filter' } }, 'refusal'],
  ])('%j stops with %s', (result, reason) => {
    expect(stopReasonOf(result)).toBe(reason);
  });

  it.each(['timeout', 'model_error', 'interrupted', 'lane_timeout'])(
    'a run failed with %s is an error answer naming the code',
    (code) => {
      const failing = () => stopReasonOf({ runId: 'r', state: 'failed', error: { code, message: 'what happened' } });
      expect(failing).toThrow(RequestError);
      expect(failing).toThrow(`the run failed: ${code}: what happened`);
    },
  );
});
