/*
 * The simulator's synthetic tools and the gate that keeps them deterministic. Each tool
 * declares a claim the way a real one would (reads of a path, writes to a path, a node, the
 * whole world) and does what its arguments say: wait some virtual time, then succeed, fail,
 * or hang until it is cancelled.
 *
 * Between the engine starting a call and the tool's execute() lies one real filesystem call
 * (the tool service creates the run's workspace), which finishes whenever the OS says. The
 * ExecutionGate holds every arriving call until all calls the engine has started have arrived,
 * then lets them go in the order they were started — so virtual time never moves while a
 * call is in flight, and timers are set in the same order on every run of a seed.
 */
import { z } from 'zod';
import { Claims, type Claim } from '../concurrency/index.js';
import { abortReason, sleep, type Clock } from '../core/clock.js';
import { defineTool, ToolError, type AnyTool } from '../tools/tool.js';
import type { SimTool } from './scenario.js';

export class ExecutionGate {
  /** Calls the engine started whose execute() has not been reached yet: key -> start order. */
  private readonly owed = new Map<string, number>();
  private readonly arrived: { order: number; release: () => void }[] = [];
  private started = 0;
  private strays: string[] = [];
  private allArrived: (() => void) | undefined;

  /** The engine started a call that will reach its tool's execute(). */
  expect(key: string): void {
    this.owed.set(key, this.started++);
  }

  /** Called by a tool's execute(): resolves when the simulator lets the call go. */
  arrive(key: string): Promise<void> {
    const order = this.owed.get(key);
    if (order === undefined) {
      this.strays.push(key);
      return new Promise(() => {});
    }
    this.owed.delete(key);
    if (this.owed.size === 0) this.allArrived?.();
    return new Promise((resolve) => this.arrived.push({ order, release: resolve }));
  }

  /**
   * Resolves once every started call has reached its tool: waits for real I/O without
   * spinning. Rejects after `failSafeMs` of wall-clock time, which only a bug can take.
   */
  arrivals(failSafeMs: number): Promise<void> {
    if (this.owed.size === 0) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const failSafe = setTimeout(() => {
        this.allArrived = undefined;
        reject(
          new Error(`simulator: started tool calls never reached their tool: ${[...this.owed.keys()].join(', ')}`),
        );
      }, failSafeMs);
      this.allArrived = () => {
        clearTimeout(failSafe);
        this.allArrived = undefined;
        resolve();
      };
    });
  }

  /** Calls started but not arrived yet. */
  get inFlight(): number {
    return this.owed.size;
  }

  /** Calls arrived and waiting to be let go. */
  get waiting(): number {
    return this.arrived.length;
  }

  /** Calls that reached a tool without the simulator expecting them (a simulator bug). */
  takeStrays(): string[] {
    return this.strays.splice(0);
  }

  /** Lets every arrived call go, in the order the engine started them. */
  releaseArrived(): void {
    const batch = this.arrived.splice(0).sort((a, b) => a.order - b.order);
    for (const call of batch) call.release();
  }
}

export const SIM_TOOL_NAMES: ReadonlySet<string> = new Set<SimTool>([
  'sim_read',
  'sim_write',
  'sim_node',
  'sim_global',
  'sim_peek',
]);

const CallInput = z.object({
  target: z.string(),
  ms: z.number().int().nonnegative(),
  outcome: z.enum(['ok', 'error', 'hang']),
});
type CallInput = z.infer<typeof CallInput>;

export interface SimToolsOptions {
  clock: Clock;
  gate: ExecutionGate;
  /** The write tool claims shared reads of its path: a lie the overlap check must catch. */
  lyingWriteClaim: boolean;
  /** Counts an injected tool fault when a call carrying it starts executing. */
  injected(kind: 'toolError' | 'toolHang'): void;
}

/** What a synthetic call really touches, whatever its tool declares. */
export function trueFootprint(tool: string, args: unknown, declared: Claim): Claim {
  const target = (args as { target?: unknown } | undefined)?.target;
  if (tool === 'sim_write' && typeof target === 'string') return Claims.paths([target]);
  return declared;
}

export function simTools(options: SimToolsOptions): AnyTool[] {
  const { clock, gate } = options;
  const execute = async (
    name: SimTool,
    input: CallInput,
    ctx: { signal: AbortSignal; runId: string; callId: string },
  ) => {
    await gate.arrive(gateKey(ctx.runId, ctx.callId));
    if (ctx.signal.aborted) throw abortReason(ctx.signal);
    if (input.outcome === 'hang') {
      options.injected('toolHang');
      await untilAborted(ctx.signal);
    }
    if (input.outcome === 'error') options.injected('toolError');
    await sleep(clock, input.ms, ctx.signal);
    if (input.outcome === 'error') throw new ToolError('sim_tool_error', `${name} ${input.target}: injected failure`);
    return `${name} ${input.target}: done in ${input.ms} ms`;
  };
  const tool = (
    name: SimTool,
    description: string,
    claim: ((input: CallInput) => Claim) | undefined,
    readOnly = false,
  ) =>
    defineTool<CallInput>({
      name,
      description,
      input: CallInput,
      readOnly,
      ...(claim ? { concurrencyClaim: claim } : {}),
      execute: (input, ctx) => execute(name, input, ctx),
    });
  return [
    tool('sim_read', 'reads a path', (input) => Claims.shared([input.target])),
    tool('sim_write', 'writes a path', (input) =>
      options.lyingWriteClaim ? Claims.shared([input.target]) : Claims.paths([input.target]),
    ),
    tool('sim_node', 'runs a command on a node', (input) => Claims.nodes([input.target])),
    tool('sim_global', 'changes anything (no claim: global)', undefined),
    tool('sim_peek', 'reads something unspecified (read-only: shared)', undefined, true),
  ];
}

export function gateKey(runId: string, callId: string): string {
  return `${runId}\u0000${callId}`;
}

function untilAborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(abortReason(signal));
    else signal.addEventListener('abort', () => reject(abortReason(signal)), { once: true });
  });
}
