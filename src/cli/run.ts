/*
 * `switchyard run <input>`: submits one message — to an in-process engine on the embedded
 * defaults, or to a gateway with --gateway — and prints the session's events live as a
 * timeline until the run is over. Exit code 0 when the run completed, 1 otherwise.
 */
import type { SubmitResult } from '../core/submit-result.js';
import { createEngine } from '../engine/index.js';
import type { RunRequest } from '../core/run-request.js';
import type { RunEvent, StreamEvent } from '../core/run-events.js';
import type { RunResult } from '../core/run-status.js';
import { connect } from '../client/client.js';
import { parseCommandArgs, UsageError, type CliIo } from './cli-args.js';
import { gatewayTarget } from './gateway-target.js';
import { ApprovalPrompt } from './approval-prompt.js';
import { Timeline } from './timeline.js';

export const RUN_USAGE = `usage: switchyard run <input> [--session S] [--policy steer|interrupt|queue]
                     [--config switchyard.toml]
                     [--gateway ws://HOST:PORT [--token-file FILE | --data-dir DIR]]

  Without --gateway the run happens in this process, on the embedded defaults (scripted
  model, memory store). With it, the token comes from --token-file, $SWITCHYARD_TOKEN or
  <--data-dir, default .switchyard>/token. (--token=T works too, with a warning: every
  user of the machine can read a command line.)
`;

const OPTIONS = {
  session: { type: 'string', short: 's' },
  policy: { type: 'string' },
  config: { type: 'string' },
  gateway: { type: 'string' },
  token: { type: 'string' },
  'token-file': { type: 'string' },
  'data-dir': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

const POLICIES = ['steer', 'interrupt', 'queue'] as const;
type Policy = (typeof POLICIES)[number];

/** What `run` needs from an engine or a gateway client. */
interface RunTarget {
  follow(sessionId: string): { events: AsyncIterable<StreamEvent>; ready: Promise<void>; close(): void };
  submit(request: RunRequest): Promise<SubmitResult>;
  wait(runId: string): Promise<RunResult>;
  history(runId: string): Promise<RunEvent[]>;
  close(): Promise<void>;
}

export async function runCommand(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandArgs(argv, OPTIONS, true);
  if (values.help) {
    io.out(RUN_USAGE);
    return 0;
  }
  const input = positionals.join(' ');
  if (input === '') throw new UsageError('run needs the message to send, e.g. switchyard run "hello"');
  const policy = values.policy;
  if (policy !== undefined && !POLICIES.includes(policy as Policy)) {
    throw new UsageError(`--policy must be one of ${POLICIES.join(', ')}, not "${policy}"`);
  }
  if (values.gateway !== undefined && values.config !== undefined) {
    throw new UsageError('--config configures an in-process engine; a gateway runs with its own config');
  }
  // A person at a terminal answers approvals; without one, gated calls fail closed at once.
  const prompt = process.stdin.isTTY ? new ApprovalPrompt() : undefined;
  const target =
    values.gateway !== undefined
      ? await gatewayRunTarget(values, values.gateway, prompt, io.err)
      : await inProcessRunTarget(values.config, prompt);
  try {
    return await submitAndFollow(
      target,
      {
        sessionId: values.session ?? 'cli',
        input,
        ...(policy !== undefined ? { busyPolicy: policy as Policy } : {}),
        ...(prompt ? {} : { unattended: true }),
      },
      io,
    );
  } finally {
    await target.close();
  }
}

async function submitAndFollow(target: RunTarget, request: RunRequest, io: CliIo): Promise<number> {
  const timeline = new Timeline({ color: io.color });
  const printed = new Set<string>();
  const print = (event: StreamEvent) => {
    const key = 'runId' in event ? `${event.runId}#${event.seq}` : `engine#${event.seq}`;
    if (printed.has(key)) return;
    printed.add(key);
    const line = timeline.format(event);
    if (line !== undefined) io.out(line);
  };
  const stream = target.follow(request.sessionId);
  await stream.ready;
  const printing = (async () => {
    for await (const event of stream.events) print(event);
  })();
  try {
    const submitted = await target.submit(request);
    timeline.label(submitted.runId);
    io.out(`# ${describeSubmit(submitted, timeline)}`);
    const result = await target.wait(submitted.runId);
    // Whatever of the run the live stream has not shown yet (the answer to wait may overtake it).
    for (const event of await target.history(result.runId)) print(event);
    io.out(`# ${describeResult(result)}`);
    return result.state === 'completed' ? 0 : 1;
  } finally {
    stream.close();
    await printing.catch(() => {});
  }
}

function describeSubmit(submitted: SubmitResult, timeline: Timeline): string {
  const run = `${timeline.label(submitted.runId)} (${submitted.runId}) on session ${submitted.sessionId}`;
  switch (submitted.outcome) {
    case 'started':
      return `${run} started`;
    case 'queued':
      return `${run} queued at position ${submitted.position ?? '?'}`;
    case 'steered':
      return `steered into ${submitted.intoRunId !== undefined ? `${timeline.label(submitted.intoRunId)} (${submitted.intoRunId})` : 'the running run'}`;
  }
}

function describeResult(result: RunResult): string {
  switch (result.state) {
    case 'completed':
      return `completed: ${result.output ?? ''}`;
    case 'cancelled':
      return `cancelled${result.reason !== undefined ? `: ${result.reason}` : ''}`;
    case 'failed':
      return `failed: ${result.error ? `${result.error.code}: ${result.error.message}` : 'unknown error'}`;
  }
}

async function inProcessRunTarget(config: string | undefined, prompt: ApprovalPrompt | undefined): Promise<RunTarget> {
  const engine = await createEngine({
    ...(config !== undefined ? { config } : {}),
    store: 'memory',
    ...(prompt ? { approver: (request) => prompt.ask(request) } : {}),
  });
  return {
    follow: (sessionId) => {
      const events = engine.events({ sessionId });
      return { events, ready: Promise.resolve(), close: () => events.close() };
    },
    submit: (request) => engine.submit(request),
    wait: (runId) => engine.wait(runId),
    history: (runId) => engine.history(runId),
    close: () => engine.close(),
  };
}

async function gatewayRunTarget(
  flags: Parameters<typeof gatewayTarget>[0],
  url: string,
  prompt: ApprovalPrompt | undefined,
  warn: (line: string) => void,
): Promise<RunTarget> {
  const { token } = await gatewayTarget(flags, url, warn);
  const client = await connect(url, { token });
  if (prompt) {
    client.onApprovalRequested((request) => {
      void prompt
        .ask(request)
        .then((decision) => client.respondApproval(request.approvalId, decision))
        .catch(() => {});
    });
  }
  return {
    follow: (sessionId) => {
      const subscription = client.subscribe({ sessionId });
      return { events: subscription, ready: subscription.ready, close: () => subscription.close() };
    },
    submit: (request) => client.submit(request),
    wait: (runId) => client.wait(runId),
    history: (runId) => client.history(runId),
    close: () => client.close(),
  };
}
