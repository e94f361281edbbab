/*
 * The whole Switchyard configuration as one zod schema, in the TOML vocabulary (snake_case).
 * Every key has its default (SPEC §10) and every table is strict, so a typo is an error rather
 * than a silently ignored key.
 */
import { z } from 'zod';
import { sandboxPlacementIssues } from './sandbox-placement.js';

const positiveInt = z.number().int().min(1);
const nonNegativeInt = z.number().int().min(0);
const positiveSeconds = z.number().positive();
const nonEmpty = z.string().min(1);
const recordKey = z.string().min(1);

const ExecutionSchema = z
  .object({
    max_runs_global: positiveInt.default(8),
    max_runs_per_agent: positiveInt.default(3),
    busy_policy: z.enum(['steer', 'interrupt', 'queue']).default('steer'),
    wait_lane_capacity: positiveInt.default(32),
    wait_lane_max_wait_seconds: positiveSeconds.default(1800),
    max_pending_steers: nonNegativeInt.default(16),
    default_timeout_seconds: positiveSeconds.default(172800),
    max_iterations: positiveInt.default(1000),
    default_model: nonEmpty.default('scripted'),
  })
  .strict();

const ToolServiceSchema = z
  .object({
    parallel_tool_concurrency: nonNegativeInt.default(8),
    scheduling: z.enum(['groups', 'dag']).default('groups'),
    default_timeout_seconds: positiveSeconds.default(60),
  })
  .strict();

const ApprovalSchema = z
  .object({
    tier: z.enum(['plan', 'ask', 'auto', 'full']).default('auto'),
    timeout_seconds: positiveSeconds.default(120),
    tools: z.record(recordKey, z.enum(['allow', 'ask', 'deny'])).default({}),
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
    name: nonEmpty,
    pattern: z.string().superRefine((pattern, ctx) => {
      const reason = regExpSyntaxError(pattern);
      if (reason !== undefined) {
        ctx.addIssue({ code: 'custom', message: `not a valid regular expression (${reason})` });
      }
    }),
    action: z.enum(['allow', 'warn', 'block']),
  })
  .strict();

const CommandPolicySchema = z
  .object({
    enforcement: z.enum(['block', 'warn', 'off']).default('warn'),
    rules: z.array(CommandRuleSchema).default([]),
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
          'unless allow_unsandboxed = true), "none" (never sandboxed; needs allow_unsandboxed = true). Default "auto". Restart-only.',
      ),
    allow_unsandboxed: z
      .boolean()
      .default(false)
      .describe(
        'The operator\'s explicit choice to let commands run without bubblewrap: backend "none", a request\'s ' +
          'sandbox.backend = "none", and "auto" on a host without a working bubblewrap. Default false.',
      ),
    bwrap_path: nonEmpty.default('bwrap').describe('The bubblewrap binary, a path or a name looked up on PATH. Default "bwrap".'),
    workspace_root: nonEmpty
      .default('.switchyard-workspaces')
      .describe(
        'Where the per-session default workspaces are created (<root>/<16 hex of sha256(sessionId)>). Must lie ' +
          'outside [store] dir and must not contain it. Default ".switchyard-workspaces" (beside the default data directory).',
      ),
    max_output_bytes: positiveInt.default(1048576).describe('Output a command may return (stdout, stderr and both interleaved, each); the rest is cut with a marker. Default 1048576.'),
    default_timeout_seconds: positiveSeconds
      .default(60)
      .describe('Longest a command may run before its whole process group is killed (clipped to the tool and run deadlines). Default 60.'),
    network: z
      .boolean()
      .default(false)
      .describe('Whether sandboxed commands share the host network (and with it the abstract unix sockets of the host). Default false.'),
    max_processes: positiveInt
      .default(512)
      .describe(
        'Most processes and threads a sandboxed command may have at once (RLIMIT_NPROC, counted in the sandbox\'s ' +
          'own user namespace); a fork past it fails. Default 512.',
      ),
    max_memory_bytes: positiveInt
      .default(4 * 1024 ** 3)
      .describe('Address space of each sandboxed process (RLIMIT_AS); an allocation past it fails. Default 4294967296 (4 GiB).'),
    max_file_bytes: positiveInt
      .default(1024 ** 3)
      .describe(
        'Largest file a sandboxed process may write (RLIMIT_FSIZE; past it the write fails and the process gets ' +
          'SIGXFSZ), and the size of each private in-memory directory (/tmp, home, /dev/shm). Default 1073741824 (1 GiB).',
      ),
    read_only_paths: z
      .array(z.string().startsWith('/', 'must be an absolute path'))
      .default([])
      .describe(
        'Extra host directories bound read-only into the sandbox, for toolchains outside /usr (e.g. "/opt/go"). ' +
          'None may be "/" or overlap [store] dir or workspace_root. Default [].',
      ),
    unprivileged_uid: nonNegativeInt
      .default(65534)
      .describe(
        'Only when the server runs as root: root-owned workspaces are handed to this user, and commands run as the ' +
          'owner of their workspace, never as root (the kernel exempts root from max_processes). Default 65534 (nobody).',
      ),
    unprivileged_gid: nonNegativeInt.default(65534).describe('The group that goes with unprivileged_uid. Default 65534 (nogroup).'),
    // prefault, not default: zod 4's .default({}) returns {} as is, skipping the inner defaults.
    command_policy: CommandPolicySchema.prefault({}).describe('Which commands are allowed, warned about or blocked before they run (hot-reloadable).'),
  })
  .strict();

const GatewaySchema = z
  .object({
    host: nonEmpty.default('127.0.0.1'),
    port: z.number().int().min(0).max(65535).default(7420),
    max_payload_bytes: positiveInt.default(1048576),
  })
  .strict();

const StoreSchema = z
  .object({
    kind: z.enum(['lowdb', 'memory']).default('lowdb'),
    dir: nonEmpty.default('.switchyard'),
  })
  .strict();

const ModelSchema = z
  .object({
    kind: z.enum(['scripted', 'openai']),
    base_url: z.string().optional(),
    model: z.string().optional(),
    api_key_env: z.string().optional(),
    script: z.string().optional(),
  })
  .strict();

const McpServerSchema = z
  .object({
    command: nonEmpty.optional(),
    args: z.array(z.string()).default([]),
    env: z.record(z.string(), z.string()).optional(),
    url: nonEmpty.optional(),
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
    execution: ExecutionSchema.prefault({}),
    tool_service: ToolServiceSchema.prefault({}),
    approval: ApprovalSchema.prefault({}),
    sandbox: SandboxSchema.prefault({}),
    gateway: GatewaySchema.prefault({}),
    store: StoreSchema.prefault({}),
    models: z.record(recordKey, ModelSchema).default({}),
    mcp: z.record(recordKey, McpServerSchema).default({}),
  })
  .strict()
  .superRefine((config, ctx) => {
    for (const issue of sandboxPlacementIssues(config.sandbox, config.store.dir)) ctx.addIssue({ code: 'custom', ...issue });
  });

export type Config = z.infer<typeof ConfigSchema>;

type DeepPartial<T> = T extends readonly unknown[]
  ? T
  : T extends object
    ? { [K in keyof T]?: DeepPartial<T[K]> }
    : T;

/** What callers may pass (a TOML document, `reconfigure(partial)`): any subset, same keys. */
export type PartialConfig = DeepPartial<z.input<typeof ConfigSchema>>;

export function defaultConfig(): Config {
  return ConfigSchema.parse({});
}
