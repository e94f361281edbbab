import { tmpdir } from 'node:os';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { OutputCap, utf8Boundary } from '../../src/sandbox/output-cap.js';
import { runCommand } from '../../src/sandbox/run-command.js';

const marker = (omitted: number) => `\n…[output truncated: ${omitted} bytes omitted]`;

/** A node one-liner as a shell command: writes exactly the bytes the script says. */
function nodeCommand(script: string): string {
  return `'${process.execPath}' -e '${script}'`;
}

function run(command: string, maxOutputBytes: number) {
  return runCommand({ command, cwd: tmpdir(), timeoutMs: 10_000, maxOutputBytes, network: false, backend: 'none' });
}

describe('OutputCap', () => {
  const cases: [description: string, limit: number, inputs: string[], expected: string][] = [
    ['under the budget: kept as is', 10, ['abc', 'def'], 'abcdef'],
    ['exactly the budget: no marker', 6, ['abc', 'def'], 'abcdef'],
    ['over the budget: cut and marked', 4, ['abc', 'def'], `abcd${marker(2)}`],
    ['later input after the cut is only counted', 2, ['abc', 'def'], `ab${marker(4)}`],
    ['a two-byte character is not split', 3, ['aéé'], `aé${marker(2)}`],
    ['a cut inside the first character keeps nothing', 1, ['é'], `${marker(2)}`],
    ['a four-byte emoji is not split', 6, ['😀😀'], `😀${marker(4)}`],
    ['a three-byte character is not split', 5, ['€€'], `€${marker(3)}`],
    ['a zero budget keeps nothing', 0, ['abc'], `${marker(3)}`],
    ['empty input is nothing', 0, [''], ''],
  ];
  it.each(cases)('%s', (_description, limit, inputs, expected) => {
    const cap = new OutputCap(limit);
    for (const input of inputs) cap.append(input);
    expect(cap.text()).toBe(expected);
    expect(cap.truncated).toBe(expected.includes('…[output truncated'));
  });

  it('keeps the longest prefix that fits, on a character boundary, for any text and budget', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: 'binary' })), fc.nat(64), (inputs, limit) => {
        const cap = new OutputCap(limit);
        for (const input of inputs) cap.append(input);
        const whole = inputs.join('');
        const total = Buffer.byteLength(whole);
        const text = cap.text();
        if (total <= limit) return text === whole;
        const cut = /\n…\[output truncated: (\d+) bytes omitted\]$/.exec(text);
        if (cut === null) return false;
        const kept = text.slice(0, cut.index);
        const keptBytes = Buffer.byteLength(kept);
        const next = [...whole.slice(kept.length)][0] ?? '';
        return (
          whole.startsWith(kept) &&
          keptBytes <= limit &&
          keptBytes + Buffer.byteLength(next) > limit &&
          Number(cut[1]) === total - keptBytes
        );
      }),
    );
  });

  it('utf8Boundary never lands on a continuation byte', () => {
    const bytes = Buffer.from('a😀é€b', 'utf8');
    const cuts = Array.from({ length: bytes.length + 1 }, (_, at) => utf8Boundary(bytes, at));
    expect(cuts).toEqual([0, 1, 1, 1, 1, 5, 5, 7, 7, 7, 10, 11]);
  });
});

describe('runCommand: output cut on a UTF-8 boundary', () => {
  it('two-byte characters cut in the middle stay valid, with the marker', async () => {
    const result = await run(nodeCommand('process.stdout.write("é".repeat(1000))'), 101);
    expect(result.truncated).toBe(true);
    expect(result.output).not.toContain('\uFFFD');
    expect(result.output).toBe(`${'é'.repeat(50)}${marker(1900)}`);
  });

  it('emoji cut in the middle stay valid, with the marker', async () => {
    const result = await run(nodeCommand('process.stdout.write("😀".repeat(5000))'), 4098);
    expect(result.output).not.toContain('\uFFFD');
    expect(result.output).toBe(`${'😀'.repeat(1024)}${marker(20000 - 4096)}`);
  });

  it('a character split across writes, with stderr in between, is reassembled', async () => {
    const script =
      'const out = (b) => new Promise((r) => process.stdout.write(Buffer.from(b), r));' +
      'const err = (s) => new Promise((r) => process.stderr.write(s, r));' +
      'const pause = () => new Promise((r) => setTimeout(r, 50));' +
      '(async () => { await out([0xc3]); await pause(); await err("x"); await pause(); await out([0xa9]); })()';
    const result = await run(nodeCommand(script), 1000);
    expect(result).toMatchObject({ stdout: 'é', stderr: 'x', output: 'xé', truncated: false });
  });
});
