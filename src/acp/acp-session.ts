/*
 * One ACP session: a Switchyard session (same id) whose workspace is the editor's cwd. It
 * follows the session's events for as long as it lives, turning them into updates and its
 * approval requests into permission requests; a prompt is a run, answered once the run is over
 * and every update of it has been sent.
 */
import type { AgentContext, ContentBlock, SessionUpdate, StopReason } from '@agentclientprotocol/sdk';
import { RequestError } from '@agentclientprotocol/sdk';
import type { ApprovalTier } from '../approval/index.js';
import type { RunEvent, RunEventOf } from '../core/run-events.js';
import { isTerminalEvent } from '../core/run-events.js';
import type { AcpBackend, SessionFeed } from './backend.js';
import { decisionOf, PERMISSION_OPTIONS, RejectedActions } from './permissions.js';
import { promptInput } from './prompt-input.js';
import { SessionUpdates, toolCallIdOf } from './session-updates.js';
import { stopReasonOf } from './stop-reasons.js';

export interface AcpSessionOptions {
  sessionId: string;
  cwd: string;
  mode: ApprovalTier;
  backend: AcpBackend;
  client: AgentContext;
  warn(message: string): void;
}

export class AcpSession {
  readonly id: string;
  readonly cwd: string;
  mode: ApprovalTier;
  readonly updates: SessionUpdates;
  private readonly rejected = new RejectedActions();
  /** Permission requests the client has not answered yet, by approval id. */
  private readonly asking = new Map<string, AbortController>();
  /** The run the session is working on, and the tier each run of ours was submitted with. */
  private activeRunId: string | undefined;
  private readonly tierOfRun = new Map<string, ApprovalTier>();
  private feed: SessionFeed | undefined;
  private lastSeq = 0;
  private ended = false;
  private readonly waiters: { seq: number; resolve(): void }[] = [];

  constructor(private readonly options: AcpSessionOptions) {
    this.id = options.sessionId;
    this.cwd = options.cwd;
    this.mode = options.mode;
    this.updates = new SessionUpdates(options.cwd);
  }

  /** Sends updates to the editor, in order. */
  async send(updates: readonly SessionUpdate[]): Promise<void> {
    for (const update of updates) await this.options.client.notify('session/update', { sessionId: this.id, update });
  }

  /** Starts following the session's events (after `fromSeq`, when a load replayed up to it). */
  async follow(fromSeq?: number): Promise<void> {
    if (fromSeq !== undefined) this.lastSeq = fromSeq;
    const feed = this.options.backend.follow(this.id, fromSeq);
    this.feed = feed;
    void this.consume(feed);
    await feed.ready;
  }

  async prompt(blocks: readonly ContentBlock[]): Promise<StopReason> {
    const { backend } = this.options;
    const activeTier = this.activeRunId === undefined ? undefined : this.tierOfRun.get(this.activeRunId);
    // A steer joins the running run and its tier; a message sent after a mode change waits for its own run.
    const modeChanged = activeTier !== undefined && activeTier !== this.mode;
    const submitted = await backend
      .submit({
        sessionId: this.id,
        input: promptInput(blocks),
        workspace: this.cwd,
        approvalTier: this.mode,
        ...(modeChanged ? { busyPolicy: 'queue' as const } : {}),
      })
      .catch((error: unknown) => {
        throw requestErrorOf(error);
      });
    if (submitted.outcome !== 'steered') this.tierOfRun.set(submitted.runId, this.mode);
    if (submitted.outcome === 'started') this.activeRunId ??= submitted.runId;
    const result = await backend.wait(submitted.runId);
    // The answer ends the turn in the editor: every update of the run goes out before it.
    const events = await backend.history(result.runId);
    await this.caughtUp(Math.max(0, ...events.filter((e) => e.sessionId === this.id).map((e) => e.sessionSeq)));
    return stopReasonOf(result);
  }

  async cancel(): Promise<void> {
    await this.options.backend.stopSession(this.id);
  }

  close(): void {
    this.ended = true;
    this.feed?.close();
    for (const controller of this.asking.values()) controller.abort();
    for (const waiter of this.waiters.splice(0)) waiter.resolve();
  }

  private async consume(feed: SessionFeed): Promise<void> {
    try {
      for await (const event of feed.events) {
        if (this.ended) break;
        this.track(event);
        await this.send(this.updates.map(event));
        if (event.type === 'approval.requested') void this.askPermission(event);
        if (event.type === 'approval.resolved') this.asking.get(event.approvalId)?.abort();
        this.lastSeq = Math.max(this.lastSeq, event.sessionSeq);
        for (const waiter of this.waiters.filter((w) => w.seq <= this.lastSeq)) waiter.resolve();
      }
    } catch (error) {
      if (!this.ended)
        this.options.warn(
          `session ${this.id}: its event feed ended: ${error instanceof Error ? error.message : String(error)}`,
        );
    } finally {
      this.close();
    }
  }

  private track(event: RunEvent): void {
    if (event.type === 'run.started') this.activeRunId = event.runId;
    if (isTerminalEvent(event)) {
      this.tierOfRun.delete(event.runId);
      if (this.activeRunId === event.runId) this.activeRunId = undefined;
    }
  }

  private caughtUp(seq: number): Promise<void> {
    if (this.ended || seq <= this.lastSeq) return Promise.resolve();
    return new Promise((resolve) => {
      const waiter = {
        seq,
        resolve: () => {
          this.waiters.splice(this.waiters.indexOf(waiter), 1);
          resolve();
        },
      };
      this.waiters.push(waiter);
    });
  }

  /** An approval the engine waits for: asked in the editor, unless this exact call was rejected "always". */
  private async askPermission(event: RunEventOf<'approval.requested'>): Promise<void> {
    const { backend, client } = this.options;
    const call = this.updates.toolCall(event.runId, event.callId);
    if (call && this.rejected.has(call.facts.tool, call.facts.args)) {
      await backend.respondApproval(event.approvalId, 'deny').catch(() => false);
      return;
    }
    const controller = new AbortController();
    this.asking.set(event.approvalId, controller);
    try {
      const toolCall = call
        ? {
            toolCallId: call.toolCallId,
            title: call.title,
            kind: call.kind,
            locations: call.locations,
            content: call.content,
            rawInput: call.rawInput,
          }
        : { toolCallId: toolCallIdOf(event.runId, event.callId), title: headlineOf(event.action) };
      const response = await client.request(
        'session/request_permission',
        { sessionId: this.id, toolCall: { ...toolCall, status: 'pending' }, options: [...PERMISSION_OPTIONS] },
        { cancellationSignal: controller.signal, stopWaitingOnCancel: true },
      );
      const { decision, rememberRejection } = decisionOf(response);
      if (rememberRejection && call) this.rejected.add(call.facts.tool, call.facts.args);
      await backend.respondApproval(event.approvalId, decision);
    } catch (error) {
      // Withdrawn because the engine decided first (a timeout, a cancelled run): nothing to answer.
      if (controller.signal.aborted) return;
      this.options.warn(
        `session ${this.id}: permission request failed, denying: ${error instanceof Error ? error.message : String(error)}`,
      );
      await backend.respondApproval(event.approvalId, 'deny').catch(() => false);
    } finally {
      this.asking.delete(event.approvalId);
    }
  }
}

function headlineOf(action: unknown): string {
  const summary = typeof action === 'object' && action !== null ? (action as { summary?: unknown }).summary : undefined;
  return typeof summary === 'string' ? (summary.split('\n', 1)[0] ?? 'tool call') : 'tool call';
}

/** An engine's refusal (in process or through a gateway) as the JSON-RPC error the editor shows. */
function requestErrorOf(error: unknown): unknown {
  if (error instanceof RequestError) return error;
  const code = engineCodeOf(error);
  if (code === undefined) return error;
  const message = error instanceof Error ? error.message : String(error);
  return code === 'invalid_request'
    ? RequestError.invalidParams({ code }, message)
    : RequestError.internalError({ code }, message);
}

function engineCodeOf(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  // An EngineError carries `code`; a gateway client's error carries it as `engineCode`.
  const candidate = (error as { engineCode?: unknown }).engineCode ?? (error as { code?: unknown }).code;
  return typeof candidate === 'string' ? candidate : undefined;
}
