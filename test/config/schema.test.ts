import { describe, expect, it } from 'vitest';
import { ConfigError, defaultConfig, parseConfig, parseConfigToml } from '../../src/config/index.js';

function configErrorOf(run: () => unknown): ConfigError {
  try {
    run();
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error('expected a ConfigError, but the config was accepted');
}

describe('defaults (README, Configuration)', () => {
  it('fills every key with its documented default', () => {
    expect(defaultConfig()).toStrictEqual({
      execution: {
        max_runs_global: 8,
        max_runs_per_agent: 3,
        busy_policy: 'steer',
        wait_lane_capacity: 32,
        lane_overflow: 'reject_newest',
        collect_quiet_ms: 500,
        collect_max: 16,
        wait_lane_max_wait_seconds: 1800,
        max_pending_steers: 16,
        default_timeout_seconds: 172800,
        max_iterations: 1000,
        priority_weights: { interactive: 4, background: 2, batch: 1 },
        default_model: 'scripted',
      },
      tool_service: {
        parallel_tool_concurrency: 8,
        scheduling: 'groups',
        default_timeout_seconds: 60,
        cross_run_claims: true,
      },
      approval: { tier: 'auto', timeout_seconds: 120, tools: {} },
      sandbox: {
        backend: 'auto',
        allow_unsandboxed: false,
        bwrap_path: 'bwrap',
        workspace_root: '.switchyard-workspaces',
        max_output_bytes: 1048576,
        default_timeout_seconds: 60,
        network: false,
        max_processes: 512,
        max_memory_bytes: 4294967296,
        max_file_bytes: 1073741824,
        read_only_paths: [],
        unprivileged_uid: 65534,
        unprivileged_gid: 65534,
        client_workspaces: 'sandbox_user',
        command_policy: { enforcement: 'warn', rules: [] },
      },
      gateway: { host: '127.0.0.1', port: 7420, max_payload_bytes: 1048576, metrics_public: false },
      store: {
        kind: 'lowdb',
        dir: '.switchyard',
        fsync: false,
        url: 'redis://127.0.0.1:6379/0',
        key_prefix: 'switchyard:',
      },
      cluster: { lease_seconds: 10 },
      telemetry: { metrics: true, service_name: 'switchyard', log_level: 'info' },
      inspector: { stately_buffer: 1000 },
      models: {},
      mcp: {},
    });
  });

  it('an empty TOML document and empty sections give the defaults too', () => {
    expect(parseConfigToml('')).toStrictEqual(defaultConfig());
    const emptySections =
      '[execution]\n[tool_service]\n[approval]\n[sandbox]\n[sandbox.command_policy]\n[gateway]\n[store]\n';
    expect(parseConfigToml(emptySections)).toStrictEqual(defaultConfig());
  });

  it('a partly set section keeps the defaults of its other keys', () => {
    const config = parseConfig({ sandbox: { network: true } });
    expect(config.sandbox).toStrictEqual({ ...defaultConfig().sandbox, network: true });
  });
});

describe('overrides from TOML', () => {
  it('reads every section, including arrays of tables, glob keys and named tables', () => {
    const toml = String.raw`
[execution]
max_runs_global = 2
busy_policy = "queue"
wait_lane_max_wait_seconds = 0.5
default_model = "local"

[tool_service]
parallel_tool_concurrency = 0
scheduling = "dag"

[approval]
tier = "ask"

[approval.tools]
"mcp_*" = "ask"
shell = "deny"

[sandbox]
backend = "none"
allow_unsandboxed = true
network = true

[sandbox.command_policy]
enforcement = "block"

[[sandbox.command_policy.rules]]
name = "no-rm-rf-root"
pattern = '^rm\s+-rf\s+/'
action = "block"

[[sandbox.command_policy.rules]]
name = "git"
pattern = "^git "
action = "allow"

[gateway]
port = 0

[store]
kind = "memory"

[cluster]
lease_seconds = 2.5
node_id = "gw-1"

[models.local]
kind = "openai"
base_url = "http://localhost:11434/v1"
model = "qwen"
api_key_env = "LOCAL_KEY"

[mcp.fs]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-filesystem", "."]
env = { DEBUG = "1" }

[mcp.remote]
url = "http://localhost:9000/mcp"

[telemetry]
otlp_endpoint = "http://collector:4318"
log_level = "debug"

[inspector]
stately_url = "ws://127.0.0.1:8080"
stately_session = "alice"
`;
    const defaults = defaultConfig();
    expect(parseConfigToml(toml)).toStrictEqual({
      execution: {
        ...defaults.execution,
        max_runs_global: 2,
        busy_policy: 'queue',
        wait_lane_max_wait_seconds: 0.5,
        default_model: 'local',
      },
      tool_service: { ...defaults.tool_service, parallel_tool_concurrency: 0, scheduling: 'dag' },
      approval: { ...defaults.approval, tier: 'ask', tools: { 'mcp_*': 'ask', shell: 'deny' } },
      sandbox: {
        ...defaults.sandbox,
        backend: 'none',
        allow_unsandboxed: true,
        network: true,
        command_policy: {
          enforcement: 'block',
          rules: [
            { name: 'no-rm-rf-root', pattern: String.raw`^rm\s+-rf\s+/`, action: 'block' },
            { name: 'git', pattern: '^git ', action: 'allow' },
          ],
        },
      },
      gateway: { ...defaults.gateway, port: 0 },
      store: { ...defaults.store, kind: 'memory' },
      cluster: { lease_seconds: 2.5, node_id: 'gw-1' },
      telemetry: { ...defaults.telemetry, otlp_endpoint: 'http://collector:4318', log_level: 'debug' },
      inspector: { stately_url: 'ws://127.0.0.1:8080', stately_session: 'alice', stately_buffer: 1000 },
      models: {
        local: {
          kind: 'openai',
          base_url: 'http://localhost:11434/v1',
          model: 'qwen',
          api_key_env: 'LOCAL_KEY',
          max_retry_wait_seconds: 60,
        },
      },
      mcp: {
        fs: { command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', '.'], env: { DEBUG: '1' } },
        remote: { url: 'http://localhost:9000/mcp', args: [] },
      },
    });
  });
});

describe('bad values name their key path and say what is allowed', () => {
  const rows: { bad: string; toml: string; path: string; message: string | RegExp }[] = [
    {
      bad: 'wrong type',
      toml: '[execution]\nmax_runs_global = "eight"',
      path: 'execution.max_runs_global',
      message: 'expected a number, got "eight"',
    },
    {
      bad: 'not an integer',
      toml: '[execution]\nmax_iterations = 1.5',
      path: 'execution.max_iterations',
      message: 'expected an integer, got 1.5',
    },
    {
      bad: 'below an inclusive minimum',
      toml: '[execution]\nmax_runs_global = 0',
      path: 'execution.max_runs_global',
      message: 'expected >= 1, got 0',
    },
    {
      bad: 'negative count',
      toml: '[execution]\nmax_pending_steers = -1',
      path: 'execution.max_pending_steers',
      message: 'expected >= 0, got -1',
    },
    {
      bad: 'zero seconds',
      toml: '[execution]\nwait_lane_max_wait_seconds = 0',
      path: 'execution.wait_lane_max_wait_seconds',
      message: 'expected > 0, got 0',
    },
    {
      bad: 'infinite seconds',
      toml: '[tool_service]\ndefault_timeout_seconds = inf',
      path: 'tool_service.default_timeout_seconds',
      message: /expected a number/,
    },
    {
      bad: 'port above range',
      toml: '[gateway]\nport = 65536',
      path: 'gateway.port',
      message: 'expected <= 65535, got 65536',
    },
    {
      bad: 'bad enum',
      toml: '[execution]\nbusy_policy = "sometimes"',
      path: 'execution.busy_policy',
      message: 'expected one of "steer" | "interrupt" | "queue" | "collect" | "reject" | "rollback", got "sometimes"',
    },
    {
      bad: 'bad tier',
      toml: '[approval]\ntier = "yolo"',
      path: 'approval.tier',
      message: 'expected one of "plan" | "ask" | "auto" | "full", got "yolo"',
    },
    {
      bad: 'bad decision under a glob key',
      toml: '[approval.tools]\n"mcp_*" = "maybe"',
      path: 'approval.tools."mcp_*"',
      message: 'expected one of "allow" | "ask" | "deny", got "maybe"',
    },
    {
      bad: 'empty string',
      toml: '[execution]\ndefault_model = ""',
      path: 'execution.default_model',
      message: 'must not be empty',
    },
    {
      bad: 'boolean as string',
      toml: '[sandbox]\nnetwork = "yes"',
      path: 'sandbox.network',
      message: 'expected true or false, got "yes"',
    },
    {
      bad: 'date where a string belongs',
      toml: '[store]\ndir = 2024-01-01',
      path: 'store.dir',
      message: 'expected a string, got a date',
    },
    {
      bad: 'scalar where a table belongs',
      toml: 'execution = 3',
      path: 'execution',
      message: 'expected a table, got 3',
    },
    {
      bad: 'unknown top-level key',
      toml: '[executon]\nmax_runs_global = 2',
      path: 'executon',
      message:
        /^unknown key \(allowed here: execution, tool_service, approval, sandbox, gateway, store, cluster, telemetry, inspector, models, mcp\)$/,
    },
    {
      bad: 'unknown nested key',
      toml: '[execution]\nmax_runs_globl = 2',
      path: 'execution.max_runs_globl',
      message: /^unknown key \(allowed here: max_runs_global, /,
    },
    {
      bad: 'unknown key in the command policy',
      toml: '[sandbox.command_policy]\nmode = "block"',
      path: 'sandbox.command_policy.mode',
      message: /allowed here: enforcement, rules/,
    },
    {
      bad: 'unknown key in a rule',
      toml: '[[sandbox.command_policy.rules]]\nname = "a"\npattern = "a"\naction = "warn"\nregex = "a"',
      path: 'sandbox.command_policy.rules[0].regex',
      message: /allowed here: name, pattern, action/,
    },
    {
      bad: 'bad regex in a rule',
      toml: '[[sandbox.command_policy.rules]]\nname = "a"\npattern = "rm (-rf"\naction = "block"',
      path: 'sandbox.command_policy.rules[0].pattern',
      message: /^not a valid regular expression \(.*Unterminated group\), got "rm \(-rf"$/,
    },
    {
      bad: 'rule without an action',
      toml: '[[sandbox.command_policy.rules]]\nname = "a"\npattern = "a"',
      path: 'sandbox.command_policy.rules[0].action',
      message: 'missing; expected one of "allow" | "warn" | "block"',
    },
    {
      bad: 'model without a kind',
      toml: '[models.local]\nmodel = "qwen"',
      path: 'models.local.kind',
      message: 'missing; expected one of "scripted" | "openai" | "anthropic" | "google"',
    },
    {
      bad: 'unknown key in a model',
      toml: '[models.local]\nkind = "openai"\napi_key = "sk-..."',
      path: 'models.local.api_key',
      message: /allowed here: kind, base_url, model, api_key_env, script/,
    },
    {
      bad: 'mcp server with neither command nor url',
      toml: '[mcp.fs]\nargs = ["."]',
      path: 'mcp.fs',
      message: /needs either "command".*or "url"/,
    },
    {
      bad: 'mcp server with both command and url',
      toml: '[mcp.fs]\ncommand = "x"\nurl = "http://h"',
      path: 'mcp.fs',
      message: /has both "command" and "url"/,
    },
    {
      bad: 'mcp args not an array',
      toml: '[mcp.fs]\ncommand = "x"\nargs = "."',
      path: 'mcp.fs.args',
      message: 'expected an array, got "."',
    },
    {
      bad: 'no sandbox without the explicit opt-in',
      toml: '[sandbox]\nbackend = "none"',
      path: 'sandbox.backend',
      message: /allow_unsandboxed = true to choose that explicitly/,
    },
    {
      bad: 'workspaces inside the data directory',
      toml: '[sandbox]\nworkspace_root = ".switchyard/workspaces"',
      path: 'sandbox.workspace_root',
      message:
        /overlaps the data directory \[store\] dir = .*\.switchyard, which holds the store and the gateway token/,
    },
    {
      bad: 'a data directory inside the workspace root',
      toml: '[store]\ndir = "/srv/w/data"\n[sandbox]\nworkspace_root = "/srv/w"',
      path: 'sandbox.workspace_root',
      message: /^\/srv\/w overlaps the data directory/,
    },
    {
      bad: 'the whole file system bound read-only',
      toml: '[sandbox]\nread_only_paths = ["/"]',
      path: 'sandbox.read_only_paths[0]',
      message: '/ is the whole file system; bind a narrower directory',
    },
    {
      bad: 'a read-only path holding the data directory',
      toml: '[store]\ndir = "/srv/sw/data"\n[sandbox]\nread_only_paths = ["/srv/sw"]',
      path: 'sandbox.read_only_paths[0]',
      message: /overlaps the data directory \/srv\/sw\/data/,
    },
    {
      bad: 'a relative read-only path',
      toml: '[sandbox]\nread_only_paths = ["opt"]',
      path: 'sandbox.read_only_paths[0]',
      message: 'must be an absolute path, got "opt"',
    },
    {
      bad: 'a zero process limit',
      toml: '[sandbox]\nmax_processes = 0',
      path: 'sandbox.max_processes',
      message: 'expected >= 1, got 0',
    },
    {
      bad: 'a Stately inspector that is not a WebSocket',
      toml: '[inspector]\nstately_url = "http://127.0.0.1:8080"',
      path: 'inspector.stately_url',
      message: /URL/,
    },
    {
      bad: 'a Stately session and run both',
      toml: '[inspector]\nstately_session = "a"\nstately_run = "r"',
      path: 'inspector.stately_run',
      message: 'give stately_session or stately_run, not both',
    },
  ];

  it.each(rows)('$bad → $path', ({ toml, path, message }) => {
    const err = configErrorOf(() => parseConfigToml(toml));
    expect(err.code).toBe('invalid_config');
    expect(err.issues).toHaveLength(1);
    const [issue] = err.issues;
    expect(issue?.path).toBe(path);
    if (typeof message === 'string') expect(issue?.message).toBe(message);
    else expect(issue?.message).toMatch(message);
    expect(err.message).toContain(`${path}: `);
  });

  it('reports every problem at once, one "path: message" line each', () => {
    const err = configErrorOf(() =>
      parseConfig({ execution: { max_runs_global: 0, busy_policy: 'x' }, gateway: { port: -1 } }),
    );
    expect(err.issues.map((i) => i.path)).toEqual([
      'execution.max_runs_global',
      'execution.busy_policy',
      'gateway.port',
    ]);
    expect(err.message.split('\n')).toEqual([
      'invalid Switchyard config:',
      '  execution.max_runs_global: expected >= 1, got 0',
      '  execution.busy_policy: expected one of "steer" | "interrupt" | "queue" | "collect" | "reject" | "rollback", got "x"',
      '  gateway.port: expected >= 0, got -1',
    ]);
  });

  it('rejects a document that is not a table', () => {
    const err = configErrorOf(() => parseConfig([1, 2]));
    expect(err.issues).toEqual([{ path: '<root>', message: 'expected a table, got an array' }]);
  });
});
