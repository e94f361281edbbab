import { describe, expect, it } from 'vitest';
import { operandCommands } from '../../src/sandbox/command-policy/named-programs.js';

/*
 * The suffix reading (docs/command-policy.md, "Families by design"): which suffixes of a command's
 * words are judged as commands in their own right. Only those that start with a judged program;
 * none of a wrapper the policy peels exactly or of a program that takes its operands as data.
 */

const ROWS: [argv: string, suffixes: string[]][] = [
  ['cpulimit -l 50 rm -rf /', ['rm -rf /']],
  ['perf stat rm -rf /', ['rm -rf /']],
  ['choom -n 0 -- /usr/bin/rm -rf /', ['/usr/bin/rm -rf /']],
  ['mytool /etc/passwd', []],
  ['echo rm -rf /', []],
  ['git commit -m rm', []],
  ['npm install sudo', []],
  ['npm exec -- sudo reboot', ['exec -- sudo reboot', 'sudo reboot', 'reboot']],
  ['nice -n 5 rm -rf /', []],
  ['cp /usr/bin/sudo ./x', []],
];

describe('operandCommands', () => {
  it.each(ROWS)('%j → %j', (argv, suffixes) => {
    expect(operandCommands(argv.split(' ')).map((suffix) => suffix.join(' '))).toEqual(suffixes);
  });
});
