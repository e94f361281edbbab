/*
 * `switchyard simulate` in its deployment mode: the option values as a table, and the usage
 * errors that must exit 2 before anything runs.
 */
import { describe, expect, it } from 'vitest';
import { durationOption, faultsOption, scaleOption } from '../../src/sim/deployment-cli.js';
import { runSimulateCommand } from '../../src/sim/index.js';

describe('deployment options', () => {
  it.each([
    ['3x', 3],
    ['3', 3],
    ['0.5x', 0.5],
    [undefined, 1],
  ] as const)('--scale %s is %d', (given, expected) => expect(scaleOption(given)).toBe(expected));

  it.each([
    ['1h', 3_600_000],
    ['30m', 1_800_000],
    ['90s', 90_000],
    ['1500ms', 1_500],
    [undefined, 3_600_000],
  ] as const)('--duration %s is %d ms', (given, expected) => expect(durationOption(given)).toBe(expected));

  it.each([
    ['crash:1/h,model-errors:2%', { crashesPerHour: 1, modelErrorRate: 0.02 }],
    ['crash:0.5/h', { crashesPerHour: 0.5 }],
    ['model-errors:10%', { modelErrorRate: 0.1 }],
    ['none', {}],
    [undefined, {}],
  ] as const)('--faults %s', (given, expected) => expect(faultsOption(given)).toEqual(expected));

  it.each(['0x', 'fast', '-2'])('refuses --scale %s', (given) =>
    expect(() => scaleOption(given)).toThrow(/positive factor/),
  );
  it.each(['1d', '0m', 'an hour'])('refuses --duration %s', (given) =>
    expect(() => durationOption(given)).toThrow(/90s, 30m or 1h/),
  );
  it.each(['crash:1', 'model-errors:200%', 'disk:1/h'])('refuses --faults %s', (given) =>
    expect(() => faultsOption(given)).toThrow(/crash:N\/h nor model-errors:P%/),
  );
});

describe('switchyard simulate (deployment mode) usage', () => {
  it.each([
    [['--from-store', 'a', '--workload', 'b'], 'give one of --from-store DIR, --from-redis URL or --workload FILE'],
    [['--compare', 'a.toml'], 'give one of --from-store DIR, --from-redis URL or --workload FILE'],
    [['--workload', 'w.json', '--compare', 'a.toml'], '--compare takes two files'],
    [['--workload', 'w.json', '--compare', 'a.toml', 'b.toml', '--config', 'c.toml'], 'leave out --config'],
    [['--workload', 'w.json', '--scale', 'lots'], 'positive factor'],
  ])('%j exits 2: %s', async (argv, message) => {
    let err = '';
    const code = await runSimulateCommand(argv, { out: () => {}, err: (text) => (err += text) });
    expect(code).toBe(2);
    expect(err).toContain(message);
    expect(err).toContain('--save-workload FILE');
  });
});
