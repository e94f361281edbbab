/*
 * The whole Switchyard configuration as one zod schema, in the TOML vocabulary (snake_case).
 * Every key has its default here and only here, and a `.describe()` saying what it does and in
 * which unit: the README's configuration table is generated from this file
 * (`npm run docs:config`, see config-table.ts), with the bounds and defaults read from the
 * schema itself, so a description never repeats them. Every table is strict, so a typo is an
 * error rather than a silently ignored key.
 */
import { z } from 'zod';
import { sandboxPlacementIssues } from './sandbox-placement.js';

const positiveInt = z.number().int().min(1);
const nonNegativeInt = z.number().int().min(0);
const positiveSeconds = z.number().positive();
const nonEmpty = z.string().min(1);
const recordKey = z.string().min(1);

const PriorityWeightsSchema = z
  .object({
    interactive: positiveInt
      .default(4)
      .describe('Weight of runs with `priority = "interactive"` (the default priority).'),
    background: positiveInt.default(2).describe('Weight of runs with `priority = "background"`.'),
    batch: positiveInt.default(1).describe('Weight of runs with `priority = "batch"`.'),
  })
  .strict();

const ExecutionSchema = z
  .object({
    max_runs_global: positiveInt
      .default(8)
      .describe(
        'Runs that may hold a permit at once, across all agents. A run keeps its permit from start to end; a run that cannot get one waits.',
      ),
    max_runs_per_agent: positiveInt
      .default(3)
      .describe(
        'Runs of one agent (`RunRequest.agentId`) that may hold a permit at once. Waiters are granted in ' +
          'arrival order, skipping one whose agent is at this cap.',
      ),
    busy_policy: z
      .enum(['steer', 'interrupt', 'queue', 'collect', 'reject', 'rollback'])
      .default('steer')
      .describe(
        'What a message for a busy session does when its request names no `busyPolicy`: join the running ' +
          'run at its next turn, cancel it and run next, wait in the lane, wait and merge with the ' +
          'compatible messages waiting behind it into one run, be refused with `session_busy`, or cancel ' +
          'the running run (`rolled_back`) and run next.',
      ),
    wait_lane_capacity: positiveInt
      .default(32)
      .describe('Messages the wait lane of one session holds. When it is full, `lane_overflow` decides.'),
    lane_overflow: z
      .enum(['reject_newest', 'drop_oldest', 'summarize_oldest'])
      .default('reject_newest')
      .describe(
        'What a full lane does with one more message: reject it with `lane_full`; drop the oldest ' +
          'waiting message (it ends `cancelled`, reason `dropped_overflow`); or drop the oldest and tell ' +
          'the next run that starts what was dropped (the first words of each).',
      ),
    collect_quiet_ms: nonNegativeInt
      .default(500)
      .describe(
        'Milliseconds without a new `collect` message before the waiting `collect` messages merge into one run; a message arriving meanwhile joins the batch.',
      ),
    collect_max: positiveInt
      .default(16)
      .describe('Most `collect` messages merged into one run; the rest wait for the next one.'),
    wait_lane_max_wait_seconds: positiveSeconds
      .default(1800)
      .describe('Seconds a message may wait in the lane; then it ends `failed` with `lane_timeout`.'),
    max_pending_steers: nonNegativeInt
      .default(16)
      .describe('Unconsumed steers one run may hold; a steer beyond it is queued instead. `0` turns steering off.'),
    default_timeout_seconds: positiveSeconds
      .default(172800)
      .describe(
        'Seconds a run may take from its start (time queued does not count) when its request sets no `timeoutMs`; then it ends `failed` with `timeout`.',
      ),
    max_iterations: positiveInt
      .default(1000)
      .describe(
        'Model turns a run may take when its request sets no `maxIterations`; then it ends `failed` with `max_iterations`.',
      ),
    steer_deadline_seconds: positiveSeconds
      .optional()
      .describe(
        "Seconds a steer may wait for the running run's next turn boundary when its request sets no " +
          '`steerDeadlineMs`; then it escalates (`steerEscalation`). Unset: a steer waits as long as the ' +
          'run takes.',
      ),
    priority_weights: PriorityWeightsSchema.prefault({}).describe(
      "The shares of the limiter's grants the priority classes get while runs of several classes wait (weighted fair queueing).",
    ),
    default_model: nonEmpty
      .default('scripted')
      .describe(
        'The model of a run whose request names none: a provider id (`scripted` is built in, `[models.<id>]` adds more), optionally as `<id>:<model>`.',
      ),
  })
  .strict();

const ToolServiceSchema = z
  .object({
    parallel_tool_concurrency: nonNegativeInt
      .default(8)
      .describe('Tool calls of one batch that may run at once. `0` or `1` runs every batch serially.'),
    scheduling: z
      .enum(['groups', 'dag'])
      .default('groups')
      .describe(
        'How a batch is ordered: contiguous groups of non-conflicting calls, one group after another, or ' +
          '`dag`, where a call waits only for the earlier calls it conflicts with.',
      ),
    default_timeout_seconds: positiveSeconds
      .default(60)
      .describe(
        "Seconds one tool call may take, clipped to the run's remaining deadline; then it is an error " +
          "result with code `timeout`. Waiting for another run's claim is bounded by it too.",
      ),
    cross_run_claims: z
      .boolean()
      .default(true)
      .describe(
        'Whether every tool call holds its claim against the calls of other runs working in the same ' +
          'workspace (a conflicting call waits, `tool.waiting`). `false`: only the calls of one batch are ' +
          'ordered.',
      ),
  })
  .strict();

const ApprovalSchema = z
  .object({
    tier: z
      .enum(['plan', 'ask', 'auto', 'full'])
      .default('auto')
      .describe(
        'The execution tier, strictest first: `plan` denies every tool that is not read-only, `ask` asks ' +
          'before every one that is not, `auto` asks before destructive ones and commands the policy marks ' +
          "`warn`, `full` asks nothing. No tier lifts a command-policy block or a tool's own " +
          '`requiresConfirmation`.',
      ),
    timeout_seconds: positiveSeconds
      .default(120)
      .describe('Seconds an approval request waits for an answer; then the call is denied (`approval_denied`).'),
    tools: z
      .record(recordKey, z.enum(['allow', 'ask', 'deny']))
      .default({})
      .describe(
        'Per-tool overrides of the tier: a tool name or glob, mapped to `allow`, `ask` or `deny`. The ' +
          'exact name wins over the longest matching glob; floors still apply.',
      ),
  })
  .strict();

function regExpSyntaxError(pattern: string): string | undefined {
  try {
    new RegExp(pattern);
    return undefined;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

const CommandRuleSchema = z
  .object({
    name: nonEmpty.describe("The rule's name, shown in a `command_blocked` error and in approval prompts."),
    pattern: z
      .string()
      .superRefine((pattern, ctx) => {
        const reason = regExpSyntaxError(pattern);
        if (reason !== undefined) {
          ctx.addIssue({ code: 'custom', message: `not a valid regular expression (${reason})` });
        }
      })
      .describe('A JavaScript regular expression, matched against every command the line may run.'),
    action: z
      .enum(['allow', 'warn', 'block'])
      .describe(
        '`block` refuses the call, `warn` asks for approval, `allow` exempts the command from the tunable rules (never from the floor).',
      ),
  })
  .strict();

const CommandPolicySchema = z
  .object({
    enforcement: z
      .enum(['block', 'warn', 'off'])
      .default('warn')
      .describe(
        'What the tunable built-in rules do when they match (download piped into a shell, sudo, shutdown, …). The floor blocks whatever this says.',
      ),
    rules: z
      .array(CommandRuleSchema)
      .default([])
      .describe(
        'Operator rules, weighed with the built-in ones: an operator `block` is stronger than the tunable rules, an operator `warn` weaker.',
      ),
  })
  .strict();

/** The [sandbox] table; every key carries its description (what it does, its default). */
export const SandboxSchema = z
  .object({
    backend: z
      .enum(['auto', 'bwrap', 'none'])
      .default('auto')
      .describe(
        'How commands run: "bwrap" (bubblewrap, required), "auto" (bubblewrap; without it commands are refused ' +
          'unless allow_unsandboxed = true), "none" (never sandboxed; needs allow_unsandboxed = true). Restart-only.',
      ),
    allow_unsandboxed: z
      .boolean()
      .default(false)
      .describe(
        'The operator\'s explicit choice to let commands run without bubblewrap: backend "none", a request\'s ' +
          'sandbox.backend = "none", and "auto" on a host without a working bubblewrap.',
      ),
    bwrap_path: nonEmpty.default('bwrap').describe('The bubblewrap binary, a path or a name looked up on PATH.'),
    workspace_root: nonEmpty
      .default('.switchyard-workspaces')
      .describe(
        'Where the per-session default workspaces are created (<root>/<16 hex of sha256(sessionId)>). Must lie ' +
          'outside [store] dir and must not contain it.',
      ),
    max_output_bytes: positiveInt
      .default(1048576)
      .describe(
        'Output a command may return (stdout, stderr and both interleaved, each); the rest is cut with a marker.',
      ),
    default_timeout_seconds: positiveSeconds
      .default(60)
      .describe(
        'Longest a command may run before its whole process group is killed (clipped to the tool and run deadlines).',
      ),
    network: z
      .boolean()
      .default(false)
      .describe(
        'Whether sandboxed commands share the host network (and with it the abstract unix sockets of the host).',
      ),
    max_processes: positiveInt
      .default(512)
      .describe(
        "Most processes and threads a sandboxed command may have at once (RLIMIT_NPROC, counted in the sandbox's " +
          'own user namespace); a fork past it fails.',
      ),
    max_memory_bytes: positiveInt
      .default(4 * 1024 ** 3)
      .describe('Address space of each sandboxed process (RLIMIT_AS); an allocation past it fails.'),
    max_file_bytes: positiveInt
      .default(1024 ** 3)
      .describe(
        'Largest file a sandboxed process may write (RLIMIT_FSIZE; past it the write fails and the process gets ' +
          'SIGXFSZ), and the size of each private in-memory directory (/tmp, home, /dev/shm).',
      ),
    read_only_paths: z
      .array(z.string().startsWith('/', 'must be an absolute path'))
      .default([])
      .describe(
        'Extra host directories bound read-only into the sandbox, for toolchains outside /usr (e.g. "/opt/go"). ' +
          'None may be "/" or overlap [store] dir or workspace_root.',
      ),
    unprivileged_uid: nonNegativeInt
      .default(65534)
      .describe(
        'Only when the server runs as root: the sandbox user, who runs commands (never root: the kernel exempts root ' +
          'from max_processes) and gets the workspaces the server creates.',
      ),
    unprivileged_gid: nonNegativeInt.default(65534).describe('The group that goes with unprivileged_uid.'),
    client_workspaces: z
      .enum(['sandbox_user', 'run_as_owner'])
      .default('sandbox_user')
      .describe(
        'Whose directories a workspace may be (a request\'s own, and the session default ones). "sandbox_user": only ' +
          "directories of the user commands run as (the server's own; for a server running as root, unprivileged_uid); " +
          '"run_as_owner": also other users\' directories, where a server running as root runs commands as their owner. ' +
          "Never root's: ownership is never changed, except of a directory the server itself creates for the sandbox user.",
      ),
    // prefault, not default: zod 4's .default({}) returns {} as is, skipping the inner defaults.
    command_policy: CommandPolicySchema.prefault({}).describe(
      'Which commands are allowed, warned about or blocked before they run (hot-reloadable).',
    ),
  })
  .strict();

const GatewaySchema = z
  .object({
    host: nonEmpty.default('127.0.0.1').describe('The address the gateway listens on (`switchyard serve --host`).'),
    port: z
      .number()
      .int()
      .min(0)
      .max(65535)
      .default(7420)
      .describe('The port the gateway listens on; `0` picks a free one (`switchyard serve --port`).'),
    max_payload_bytes: positiveInt
      .default(1048576)
      .describe('Bytes one WebSocket frame may hold; a larger frame closes the connection with code 1009.'),
    metrics_public: z
      .boolean()
      .default(false)
      .describe(
        'Whether `GET /metrics` answers without the gateway token, for a Prometheus scraper on a private ' +
          'network. Otherwise the scraper sends `Authorization: Bearer <token>`.',
      ),
  })
  .strict();

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const TelemetrySchema = z
  .object({
    metrics: z
      .boolean()
      .default(true)
      .describe('Whether `switchyard serve` keeps Prometheus metrics and serves them at `GET /metrics`.'),
    otlp_endpoint: z
      .url({ protocol: /^https?$/ })
      .optional()
      .describe(
        "Where spans go: an OpenTelemetry collector's OTLP/HTTP address (`http://localhost:4318`; " +
          '`/v1/traces` is added unless the path already ends with it). Set, it turns tracing on: a span ' +
          'per run, model turn and tool call. Unset, no tracing code is loaded.',
      ),
    service_name: nonEmpty.default('switchyard').describe('The `service.name` the spans are reported under.'),
    log_level: z
      .enum(LOG_LEVELS)
      .default('info')
      .describe(
        'The least severe log line written; the `SWITCHYARD_LOG_LEVEL` environment variable overrides it. `debug` adds a line per model turn and tool call.',
      ),
  })
  .strict();

const InspectorSchema = z
  .object({
    stately_url: z
      .url({ protocol: /^wss?$/ })
      .optional()
      .describe(
        'An inspector server of `@statelyai/inspect` (`createInspectorServer()`, e.g. ' +
          "`ws://127.0.0.1:8080`) to send the engine's actors to, for Stately's Inspector in a browser " +
          '(`switchyard serve --stately-inspector`). Unset, the optional package is not loaded.',
      ),
    stately_session: nonEmpty
      .optional()
      .describe(
        "Send only this session's actors (the session and its runs) to `stately_url`. Unset with `stately_run` unset: every actor, the limiter too.",
      ),
    stately_run: nonEmpty
      .optional()
      .describe("Send only this run's actors (the run, its tool batches and tool calls) to `stately_url`."),
    stately_buffer: positiveInt
      .default(1000)
      .describe(
        'Inspection events kept for `stately_url` while it cannot be reached; beyond it the oldest are dropped and counted.',
      ),
  })
  .strict()
  .refine((i) => i.stately_session === undefined || i.stately_run === undefined, {
    message: 'give stately_session or stately_run, not both',
    path: ['stately_run'],
  });

const StoreSchema = z
  .object({
    kind: z
      .enum(['lowdb', 'memory', 'redis'])
      .default('lowdb')
      .describe(
        'Where runs, event logs, sessions, lanes and grants are kept: JSON files under `dir`, memory ' +
          '(nothing survives a restart), or a Redis server at `url`, which several gateway processes can ' +
          'share (README, "Several gateway processes").',
      ),
    dir: nonEmpty
      .default('.switchyard')
      .describe(
        'The data directory of the file store (`switchyard serve --data-dir`); the gateway keeps its ' +
          'token file here too. With `kind = "redis"` it holds only the token file.',
      ),
    fsync: z
      .boolean()
      .default(false)
      .describe(
        'File store: fsync each file and its directory before a write counts as done. Off, an ' +
          'acknowledged message survives a crash of the process; on, a power loss too, at the cost of a ' +
          'disk flush per group commit.',
      ),
    url: z
      .string()
      .regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL')
      .default('redis://127.0.0.1:6379/0')
      .describe('`kind = "redis"` only: the server, as `redis://[user:password@]host:port/db` (`rediss://` for TLS).'),
    key_prefix: z
      .string()
      .default('switchyard:')
      .describe(
        '`kind = "redis"` only: the prefix of every key the store and the cluster write, so several ' +
          'clusters (or other applications) can share one Redis database.',
      ),
  })
  .strict();

const ClusterSchema = z
  .object({
    lease_seconds: positiveSeconds
      .default(10)
      .describe(
        "Seconds a process owns a session (and holds its runs' permits) without renewing; it renews " +
          'every third of it. A process that dies or stalls longer loses its sessions to the others, whose ' +
          'takeover ends its running runs `failed` / `interrupted`.',
      ),
    node_id: nonEmpty
      .optional()
      .describe(
        "This process's name in the cluster, carried by `run.started` as `node`; unset, it is the host " +
          'name and the process id joined by a colon. Must be unique among the processes on one Redis.',
      ),
  })
  .strict();

const ToolChoiceSchema = z.union([
  z.enum(['auto', 'none', 'required']),
  z.object({ tool: nonEmpty.describe('The tool the model must call.') }).strict(),
]);

const ModelSchema = z
  .object({
    kind: z
      .enum(['scripted', 'openai', 'anthropic', 'google'])
      .describe(
        '"openai": any OpenAI-compatible Chat Completions server; "anthropic": the Messages API; "google": the Gemini API; "scripted": turns from `script`.',
      ),
    base_url: z
      .string()
      .optional()
      .describe(
        'API root. Required for "openai" (e.g. "http://localhost:11434/v1"); defaults to the official endpoint for "anthropic" and "google".',
      ),
    model: z
      .string()
      .optional()
      .describe(
        'Model used when a run names none ("id:model" in RunRequest.model names one). Required for HTTP kinds.',
      ),
    api_key_env: z
      .string()
      .optional()
      .describe(
        'Environment variable holding the API key. Default: none for "openai", ANTHROPIC_API_KEY for "anthropic", GEMINI_API_KEY for "google".',
      ),
    script: z.string().optional().describe('"scripted" only: a JSON file holding an array of turns.'),
    max_tokens: positiveInt
      .optional()
      .describe(
        "Cap on each reply's tokens. Default: the server's (for \"anthropic\", the package's per-model default).",
      ),
    temperature: z.number().min(0).max(2).optional().describe("Sampling temperature. Default: the server's."),
    tool_choice: ToolChoiceSchema.optional().describe(
      '"auto", "none", "required", or { tool = "name" } to force one tool. Default: the server\'s ("auto").',
    ),
    parallel_tool_calls: z
      .boolean()
      .optional()
      .describe(
        'false asks for at most one tool call per turn ("openai" and "anthropic"; Gemini has no such switch). Default: the server\'s.',
      ),
    headers: z
      .record(z.string(), z.string())
      .optional()
      .describe('Extra request headers, e.g. { "api-key" = "..." } for Azure or OpenRouter\'s HTTP-Referer.'),
    max_retry_wait_seconds: positiveSeconds
      .default(60)
      .describe(
        'Longest wait a server may ask for (Retry-After, rate-limit reset) before the turn fails with rate_limited instead.',
      ),
  })
  .strict();

const McpServerSchema = z
  .object({
    command: nonEmpty
      .optional()
      .describe('A local MCP server: the program to start, spoken to over stdio. Exactly one of `command` and `url`.'),
    args: z.array(z.string()).default([]).describe('The arguments of `command`.'),
    env: z
      .record(z.string(), z.string())
      .optional()
      .describe("Variables merged over the engine's own environment for `command`."),
    url: nonEmpty
      .optional()
      .describe('A remote MCP server, reached over Streamable HTTP. Exactly one of `command` and `url`.'),
  })
  .strict()
  .refine((s) => s.command !== undefined || s.url !== undefined, {
    message: 'needs either "command" (a local server process) or "url" (a remote server)',
  })
  .refine((s) => s.command === undefined || s.url === undefined, {
    message: 'has both "command" and "url"; keep exactly one',
  });

export const ConfigSchema = z
  .object({
    execution: ExecutionSchema.prefault({}).describe('Admission, limits and the run loop.'),
    tool_service: ToolServiceSchema.prefault({}).describe(
      'How the tool calls of one model turn are scheduled and timed.',
    ),
    approval: ApprovalSchema.prefault({}).describe('When a person must confirm a tool call.'),
    sandbox: SandboxSchema.prefault({}).describe('Workspaces and how commands run.'),
    gateway: GatewaySchema.prefault({}).describe('The WebSocket gateway of `switchyard serve`.'),
    store: StoreSchema.prefault({}).describe('Persistence.'),
    cluster: ClusterSchema.prefault({}).describe(
      'Several gateway processes on one Redis (`[store] kind = "redis"`): session leases and takeover.',
    ),
    telemetry: TelemetrySchema.prefault({}).describe(
      'Metrics, traces and logs of `switchyard serve` (see "Operating Switchyard").',
    ),
    inspector: InspectorSchema.prefault({}).describe(
      'Inspection of `switchyard serve` beyond its own page at `/inspect`: Stately\'s Inspector (see "Stately\'s Inspector").',
    ),
    models: z
      .record(recordKey, ModelSchema)
      .default({})
      .describe('Model providers by id; a run names one with `RunRequest.model = "<id>"` or `"<id>:<model>"`.'),
    mcp: z
      .record(recordKey, McpServerSchema)
      .default({})
      .describe('MCP servers by id, connected at start; their tools are named `<id>__<tool>`.'),
  })
  .strict()
  .superRefine((config, ctx) => {
    for (const issue of sandboxPlacementIssues(config.sandbox, config.store.dir))
      ctx.addIssue({ code: 'custom', ...issue });
  });

export type Config = z.infer<typeof ConfigSchema>;

type DeepPartial<T> = T extends readonly unknown[] ? T : T extends object ? { [K in keyof T]?: DeepPartial<T[K]> } : T;

/** What callers may pass (a TOML document, `reconfigure(partial)`): any subset, same keys. */
export type PartialConfig = DeepPartial<z.input<typeof ConfigSchema>>;

export function defaultConfig(): Config {
  return ConfigSchema.parse({});
}
