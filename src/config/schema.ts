/*
 * The whole Switchyard configuration as one zod schema, in the TOML vocabulary (snake_case).
 * Every key has its default (SPEC §10) and every table is strict, so a typo is an error rather
 * than a silently ignored key.
 */
import { z } from 'zod';

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

const SandboxSchema = z
  .object({
    backend: z.enum(['auto', 'bwrap', 'none']).default('auto'),
    workspace_root: nonEmpty.default('.switchyard/workspaces'),
    max_output_bytes: positiveInt.default(1048576),
    default_timeout_seconds: positiveSeconds.default(60),
    network: z.boolean().default(false),
    // prefault, not default: zod 4's .default({}) returns {} as is, skipping the inner defaults.
    command_policy: CommandPolicySchema.prefault({}),
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
      .describe('API root. Required for "openai" (e.g. "http://localhost:11434/v1"); defaults to the official endpoint for "anthropic" and "google".'),
    model: z.string().optional().describe('Model used when a run names none ("id:model" in RunRequest.model names one). Required for HTTP kinds.'),
    api_key_env: z
      .string()
      .optional()
      .describe('Environment variable holding the API key. Default: none for "openai", ANTHROPIC_API_KEY for "anthropic", GEMINI_API_KEY for "google".'),
    script: z.string().optional().describe('"scripted" only: a JSON file holding an array of turns.'),
    max_tokens: positiveInt.optional().describe("Cap on each reply's tokens. Default: the server's (for \"anthropic\", the package's per-model default)."),
    temperature: z.number().min(0).max(2).optional().describe("Sampling temperature. Default: the server's."),
    tool_choice: ToolChoiceSchema.optional().describe('"auto", "none", "required", or { tool = "name" } to force one tool. Default: the server\'s ("auto").'),
    parallel_tool_calls: z
      .boolean()
      .optional()
      .describe('false asks for at most one tool call per turn ("openai" and "anthropic"; Gemini has no such switch). Default: the server\'s.'),
    headers: z.record(z.string(), z.string()).optional().describe('Extra request headers, e.g. { "api-key" = "..." } for Azure or OpenRouter\'s HTTP-Referer.'),
    max_retry_wait_seconds: positiveSeconds
      .optional()
      .describe('Longest wait a server may ask for (Retry-After, rate-limit reset) before the turn fails with rate_limited instead. Default 60.'),
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
  .strict();

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
