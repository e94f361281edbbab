/*
 * session_send: hand a message to another local session as a delegated run (parentRunId =
 * this run) and return that run's final output. Claims the target session: two sends to
 * different sessions run side by side, anything else waits, because the delegated run's
 * local footprint is unknown.
 */
import { z } from 'zod';
import { Claims } from '../../concurrency/index.js';
import { defineTool, ToolError } from '../tool.js';

export const sessionSendInput = z
  .object({
    session: z.string().trim().min(1).describe('The session to delegate to (its id).'),
    message: z.string().min(1).describe('The message the delegated run starts with.'),
  })
  .strict();

export type SessionSendInput = z.infer<typeof sessionSendInput>;

export const sessionSendTool = defineTool({
  name: 'session_send',
  description:
    'Delegates a task to another session: starts a run there with your message and returns its final answer.',
  input: sessionSendInput,
  concurrencyClaim: ({ session }) => Claims.sessions([session]),
  async execute({ session, message }, ctx) {
    if (!ctx.delegate) throw new ToolError('unavailable', 'session_send needs an engine that can start delegated runs');
    const result = await ctx.delegate({ sessionId: session, input: message });
    if (result.state !== 'completed') {
      throw new ToolError(
        result.state === 'cancelled' ? 'delegated_run_cancelled' : 'delegated_run_failed',
        `the delegated run ${result.runId} on session "${session}" ended ` +
          `${result.state}${result.error ? `: ${result.error.code}: ${result.error.message}` : ''}`,
      );
    }
    return { runId: result.runId, session, output: result.output ?? '' };
  },
});
