/*
 * The approval prompt of `switchyard run` in a terminal: shows the action (command in full,
 * secrets already redacted) and asks for allow once / allow for the session / deny. Prompts
 * are asked one at a time, in the order they arrive.
 */
import { createInterface } from 'node:readline/promises';
import type { ApprovalDecision } from '../approval/index.js';

export interface PromptedAction {
  approvalId: string;
  callId: string;
  action: unknown;
}

const ANSWERS: Record<string, ApprovalDecision> = {
  o: 'allow_once',
  once: 'allow_once',
  s: 'allow_session',
  session: 'allow_session',
  d: 'deny',
  deny: 'deny',
  n: 'deny',
};

export class ApprovalPrompt {
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly input: NodeJS.ReadableStream = process.stdin,
    private readonly output: NodeJS.WritableStream = process.stdout,
  ) {}

  ask(request: PromptedAction): Promise<ApprovalDecision> {
    const answer = this.queue.then(() => this.askNow(request));
    this.queue = answer.catch(() => {});
    return answer;
  }

  private async askNow(request: PromptedAction): Promise<ApprovalDecision> {
    const rl = createInterface({ input: this.input, output: this.output, terminal: true });
    try {
      const summary = describe(request.action);
      for (;;) {
        const reply = (await rl.question(`\n? approve ${summary}\n  [o]nce, [s]ession, [d]eny: `)).trim().toLowerCase();
        const decision = ANSWERS[reply];
        if (decision) return decision;
      }
    } finally {
      rl.close();
    }
  }
}

function describe(action: unknown): string {
  if (action && typeof action === 'object' && 'summary' in action && typeof action.summary === 'string')
    return action.summary;
  return JSON.stringify(action);
}
