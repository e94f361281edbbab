import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { defaultConfig, diffConfig, HOT_SECTIONS, mergeConfig, parseConfig } from '../../src/config/index.js';
import type { PartialConfig } from '../../src/config/index.js';

describe('diffConfig classifies each changed key (hot reload, README: Configuration)', () => {
  it('hot sections are the ones the engine reads per decision', () => {
    expect(HOT_SECTIONS).toEqual(['execution', 'tool_service', 'approval', 'sandbox.command_policy']);
  });

  const rows: { change: string; partial: PartialConfig; applied: string[]; restartRequired: string[] }[] = [
    { change: 'nothing', partial: {}, applied: [], restartRequired: [] },
    {
      change: 'a value set to its current value',
      partial: { execution: { max_runs_global: 8 } },
      applied: [],
      restartRequired: [],
    },
    {
      change: 'an execution limit',
      partial: { execution: { max_runs_global: 2 } },
      applied: ['execution.max_runs_global'],
      restartRequired: [],
    },
    {
      change: 'the busy policy',
      partial: { execution: { busy_policy: 'queue' } },
      applied: ['execution.busy_policy'],
      restartRequired: [],
    },
    {
      change: 'tool scheduling',
      partial: { tool_service: { scheduling: 'dag' } },
      applied: ['tool_service.scheduling'],
      restartRequired: [],
    },
    {
      change: 'the approval tier',
      partial: { approval: { tier: 'plan' } },
      applied: ['approval.tier'],
      restartRequired: [],
    },
    {
      change: 'a per-tool approval (whole record)',
      partial: { approval: { tools: { 'mcp_*': 'ask' } } },
      applied: ['approval.tools'],
      restartRequired: [],
    },
    {
      change: 'command policy enforcement',
      partial: { sandbox: { command_policy: { enforcement: 'block' } } },
      applied: ['sandbox.command_policy.enforcement'],
      restartRequired: [],
    },
    {
      change: 'command policy rules',
      partial: { sandbox: { command_policy: { rules: [{ name: 'a', pattern: 'a', action: 'block' }] } } },
      applied: ['sandbox.command_policy.rules'],
      restartRequired: [],
    },
    {
      change: 'the sandbox backend',
      partial: { sandbox: { backend: 'bwrap' } },
      applied: [],
      restartRequired: ['sandbox.backend'],
    },
    {
      change: 'sandbox limits',
      partial: { sandbox: { max_processes: 64, max_file_bytes: 1024 } },
      applied: [],
      restartRequired: ['sandbox.max_processes', 'sandbox.max_file_bytes'],
    },
    {
      change: 'sandbox networking',
      partial: { sandbox: { network: true } },
      applied: [],
      restartRequired: ['sandbox.network'],
    },
    {
      change: 'the gateway port',
      partial: { gateway: { port: 8000 } },
      applied: [],
      restartRequired: ['gateway.port'],
    },
    {
      change: 'the store',
      partial: { store: { kind: 'memory', dir: 'x' } },
      applied: [],
      restartRequired: ['store.kind', 'store.dir'],
    },
    {
      change: 'a model (whole record)',
      partial: { models: { local: { kind: 'scripted' } } },
      applied: [],
      restartRequired: ['models'],
    },
    {
      change: 'an MCP server (whole record)',
      partial: { mcp: { fs: { command: 'x' } } },
      applied: [],
      restartRequired: ['mcp'],
    },
    {
      change: 'hot and cold keys together',
      partial: {
        execution: { max_iterations: 5 },
        gateway: { host: '0.0.0.0' },
        tool_service: { parallel_tool_concurrency: 1 },
      },
      applied: ['execution.max_iterations', 'tool_service.parallel_tool_concurrency'],
      restartRequired: ['gateway.host'],
    },
  ];

  it.each(rows)('$change', ({ partial, applied, restartRequired }) => {
    const prev = defaultConfig();
    const diff = diffConfig(prev, mergeConfig(prev, partial));
    expect(diff.applied).toEqual(applied);
    expect(diff.restartRequired).toEqual(restartRequired);
    expect([...diff.changed].sort()).toEqual([...applied, ...restartRequired].sort());
  });

  it('ignores the order of keys inside records', () => {
    const a = parseConfig({ approval: { tools: { x: 'ask', y: 'deny' } } });
    const b = parseConfig({ approval: { tools: { y: 'deny', x: 'ask' } } });
    expect(diffConfig(a, b).changed).toEqual([]);
  });

  it('reports a removed record entry', () => {
    const prev = parseConfig({ models: { local: { kind: 'scripted' } } });
    expect(diffConfig(prev, defaultConfig()).restartRequired).toEqual(['models']);
  });

  it('for any execution change, reports exactly the keys whose value differs, all applied', () => {
    const executionPartial = fc.record(
      {
        max_runs_global: fc.integer({ min: 1, max: 16 }),
        max_runs_per_agent: fc.integer({ min: 1, max: 6 }),
        busy_policy: fc.constantFrom('steer' as const, 'interrupt' as const, 'queue' as const),
        wait_lane_capacity: fc.integer({ min: 1, max: 64 }),
        max_pending_steers: fc.integer({ min: 0, max: 32 }),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(executionPartial, (execution) => {
        const prev = defaultConfig();
        const diff = diffConfig(prev, mergeConfig(prev, { execution }));
        const expected = Object.entries(execution)
          .filter(([key, value]) => prev.execution[key as keyof typeof prev.execution] !== value)
          .map(([key]) => `execution.${key}`);
        expect([...diff.applied].sort()).toEqual(expected.sort());
        expect(diff.changed).toEqual(diff.applied);
        expect(diff.restartRequired).toEqual([]);
      }),
    );
  });
});
