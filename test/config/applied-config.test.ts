import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { appliedConfig, defaultConfig, diffConfig, mergeConfig } from '../../src/config/index.js';
import type { PartialConfig } from '../../src/config/index.js';

describe('appliedConfig: restart-only keys keep their value until a restart', () => {
  const rows: { change: string; partial: PartialConfig }[] = [
    { change: 'the sandbox backend', partial: { sandbox: { backend: 'bwrap' } } },
    { change: 'unsandboxed execution allowed', partial: { sandbox: { backend: 'none', allow_unsandboxed: true } } },
    {
      change: 'the workspace root and the limits',
      partial: { sandbox: { workspace_root: '/elsewhere', max_processes: 2 } },
    },
    {
      change: 'a hot and a cold key together',
      partial: { execution: { max_iterations: 5 }, sandbox: { network: true } },
    },
    {
      change: 'the command policy (hot, inside the cold sandbox table)',
      partial: { sandbox: { command_policy: { enforcement: 'block' }, network: true } },
    },
    { change: 'records', partial: { approval: { tools: { x: 'deny' } }, models: { m: { kind: 'scripted' } } } },
  ];

  it.each(rows)('$change: exactly what diffConfig calls applied is applied, the rest waits', ({ partial }) => {
    const current = defaultConfig();
    const next = mergeConfig(current, partial);
    const diff = diffConfig(current, next);
    const applied = appliedConfig(current, next);
    expect(diffConfig(current, applied).changed.sort()).toEqual([...diff.applied].sort());
    expect(diffConfig(applied, next).changed.sort()).toEqual([...diff.restartRequired].sort());
  });

  it('the sandbox backend asked for in a reload is not the one in effect', () => {
    const current = defaultConfig();
    const applied = appliedConfig(
      current,
      mergeConfig(current, { sandbox: { backend: 'none', allow_unsandboxed: true } }),
    );
    expect(applied.sandbox.backend).toBe('auto');
    expect(applied.sandbox.allow_unsandboxed).toBe(false);
  });

  it('never shares structure with either input', () => {
    const current = defaultConfig();
    const next = mergeConfig(current, { approval: { tools: { x: 'deny' } } });
    const applied = appliedConfig(current, next);
    applied.approval.tools['y'] = 'allow';
    applied.sandbox.read_only_paths.push('/opt');
    expect(next.approval.tools).toEqual({ x: 'deny' });
    expect(current.sandbox.read_only_paths).toEqual([]);
  });

  it('for any mix of hot and restart-only changes, only the hot ones take effect', () => {
    const partial = fc.record(
      {
        execution: fc.record(
          {
            max_runs_global: fc.integer({ min: 1, max: 16 }),
            busy_policy: fc.constantFrom('steer' as const, 'queue' as const),
          },
          { requiredKeys: [] },
        ),
        approval: fc.record(
          { tier: fc.constantFrom('plan' as const, 'ask' as const, 'full' as const) },
          { requiredKeys: [] },
        ),
        sandbox: fc.record(
          {
            backend: fc.constantFrom('auto' as const, 'bwrap' as const),
            network: fc.boolean(),
            max_file_bytes: fc.integer({ min: 1, max: 1 << 30 }),
            command_policy: fc.record({
              enforcement: fc.constantFrom('block' as const, 'warn' as const, 'off' as const),
            }),
          },
          { requiredKeys: [] },
        ),
        gateway: fc.record({ port: fc.integer({ min: 0, max: 65535 }) }),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(partial, (change) => {
        const current = defaultConfig();
        const next = mergeConfig(current, change);
        const diff = diffConfig(current, next);
        const applied = appliedConfig(current, next);
        expect(diffConfig(current, applied).changed.sort()).toEqual([...diff.applied].sort());
        expect(diffConfig(applied, next).restartRequired.sort()).toEqual([...diff.restartRequired].sort());
      }),
    );
  });
});
