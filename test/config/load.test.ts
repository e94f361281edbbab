import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { ConfigError, defaultConfig, loadConfig, mergeConfig } from '../../src/config/index.js';
import type { Config, PartialConfig } from '../../src/config/index.js';
import { tempDirs } from '../support/temp-dirs.js';

let dir: string;
const tempDir = tempDirs('switchyard-config-', 'afterEach');

beforeEach(async () => {
  dir = await tempDir();
});

async function rejectionOf(promise: Promise<unknown>): Promise<ConfigError> {
  const err: unknown = await promise.then(
    () => new Error('expected a ConfigError, but the config loaded'),
    (e: unknown) => e,
  );
  if (err instanceof ConfigError) return err;
  throw err;
}

describe('loadConfig', () => {
  it('reads a TOML file and fills the defaults', async () => {
    const file = join(dir, 'switchyard.toml');
    await writeFile(file, '[execution]\nmax_runs_global = 2\n[approval.tools]\n"mcp_*" = "ask"\n');
    const config = await loadConfig(file);
    expect(config.execution).toStrictEqual({ ...defaultConfig().execution, max_runs_global: 2 });
    expect(config.approval.tools).toStrictEqual({ 'mcp_*': 'ask' });
  });

  it('a missing file is a ConfigError that says the file does not exist', async () => {
    const file = join(dir, 'nope.toml');
    const err = await rejectionOf(loadConfig(file));
    expect(err.code).toBe('file_not_found');
    expect(err.issues).toHaveLength(1);
    expect(err.issues[0]?.path).toBe(file);
    expect(err.issues[0]?.message).toMatch(/does not exist/);
    expect(err.message).toContain(file);
  });

  it('a TOML syntax error names the file, line and column', async () => {
    const file = join(dir, 'switchyard.toml');
    await writeFile(file, '[execution]\nmax_runs_global = \n');
    const err = await rejectionOf(loadConfig(file));
    expect(err.code).toBe('toml_syntax');
    expect(err.issues).toHaveLength(1);
    expect(err.issues[0]?.path).toBe(file);
    expect(err.issues[0]?.message).toMatch(/^line 2, column \d+: /);
  });

  it('a bad value in the file names the key path and the file', async () => {
    const file = join(dir, 'switchyard.toml');
    await writeFile(file, '[gateway]\nport = 99999\n');
    const err = await rejectionOf(loadConfig(file));
    expect(err.code).toBe('invalid_config');
    expect(err.source).toBe(file);
    expect(err.issues).toEqual([{ path: 'gateway.port', message: 'expected <= 65535, got 99999' }]);
  });

  it('a path that cannot be read as a file is a ConfigError, not a crash', async () => {
    const sub = join(dir, 'a-directory.toml');
    await mkdir(sub);
    const err = await rejectionOf(loadConfig(sub));
    expect(err.code).toBe('file_unreadable');
    expect(err.issues[0]?.path).toBe(sub);
  });
});

describe('mergeConfig', () => {
  function baseConfig(): Config {
    return mergeConfig(defaultConfig(), {
      approval: { tools: { shell: 'deny' } },
      sandbox: { command_policy: { rules: [{ name: 'a', pattern: 'a', action: 'warn' }] } },
      models: { local: { kind: 'openai', model: 'qwen' } },
      mcp: { fs: { command: 'npx', args: ['server'] } },
    });
  }

  it('merges tables key by key and keeps the untouched keys', () => {
    const merged = mergeConfig(baseConfig(), { execution: { max_runs_global: 2, busy_policy: 'queue' } });
    expect(merged.execution).toStrictEqual({
      ...defaultConfig().execution,
      max_runs_global: 2,
      busy_policy: 'queue',
    });
    expect(merged.approval).toStrictEqual(baseConfig().approval);
  });

  it('merges records by key: approval.tools, models, mcp', () => {
    const merged = mergeConfig(baseConfig(), {
      approval: { tools: { 'mcp_*': 'ask' } },
      models: { local: { base_url: 'http://localhost:1/v1' }, other: { kind: 'scripted' } },
      mcp: { web: { url: 'http://localhost:9/mcp' } },
    });
    expect(merged.approval.tools).toStrictEqual({ shell: 'deny', 'mcp_*': 'ask' });
    expect(merged.models).toStrictEqual({
      local: { kind: 'openai', model: 'qwen', base_url: 'http://localhost:1/v1', max_retry_wait_seconds: 60 },
      other: { kind: 'scripted', max_retry_wait_seconds: 60 },
    });
    expect(merged.mcp).toStrictEqual({
      fs: { command: 'npx', args: ['server'] },
      web: { url: 'http://localhost:9/mcp', args: [] },
    });
  });

  it('replaces arrays instead of merging them', () => {
    const rules = [{ name: 'b', pattern: 'b', action: 'block' as const }];
    const merged = mergeConfig(baseConfig(), {
      sandbox: { command_policy: { rules } },
      mcp: { fs: { args: ['other'] } },
    });
    expect(merged.sandbox.command_policy.rules).toStrictEqual(rules);
    expect(merged.mcp['fs']?.args).toStrictEqual(['other']);
  });

  it('ignores keys whose value is undefined', () => {
    expect(mergeConfig(baseConfig(), { execution: { max_runs_global: undefined } })).toStrictEqual(baseConfig());
  });

  it('returns a config that shares nothing with base', () => {
    const base = baseConfig();
    const merged = mergeConfig(base, {});
    merged.approval.tools['x'] = 'allow';
    merged.sandbox.command_policy.rules.push({ name: 'c', pattern: 'c', action: 'allow' });
    expect(base).toStrictEqual(baseConfig());
  });

  // Typed `unknown`: these partials are wrong on purpose, as untyped callers could send them.
  const badPartials: { bad: string; partial: unknown; path: string }[] = [
    { bad: 'out of range', partial: { execution: { max_runs_global: 0 } }, path: 'execution.max_runs_global' },
    { bad: 'bad enum', partial: { execution: { busy_policy: 'later' } }, path: 'execution.busy_policy' },
    { bad: 'unknown key', partial: { gateway: { prot: 1 } }, path: 'gateway.prot' },
    { bad: 'mcp made invalid by merging', partial: { mcp: { fs: { url: 'http://h' } } }, path: 'mcp.fs' },
    { bad: 'a "__proto__" key', partial: JSON.parse('{"__proto__": {"x": 1}}'), path: '__proto__' },
  ];

  it.each(badPartials)('rejects a bad partial ($bad) and leaves base untouched', ({ partial, path }) => {
    const base = baseConfig();
    const snapshot = structuredClone(base);
    let caught: unknown;
    try {
      mergeConfig(base, partial as PartialConfig);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    expect((caught as ConfigError).issues.map((i) => i.path)).toContain(path);
    expect(base).toStrictEqual(snapshot);
  });
});
