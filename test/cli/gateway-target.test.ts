/*
 * Where a client command's token comes from, and the warning when it comes from the command
 * line, which every user of the machine can read (ps, /proc/<pid>/cmdline).
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { gatewayTarget, TOKEN_IN_PS_WARNING } from '../../src/cli/gateway-target.js';
import { tempDirs } from '../support/temp-dirs.js';

const tempDir = tempDirs();
const URL = 'ws://127.0.0.1:7420';
const savedEnv = process.env['SWITCHYARD_TOKEN'];

afterEach(() => {
  if (savedEnv === undefined) delete process.env['SWITCHYARD_TOKEN'];
  else process.env['SWITCHYARD_TOKEN'] = savedEnv;
});

describe('gatewayTarget', () => {
  it.each([
    ['--token', { token: 'from-the-command-line' }, undefined, 'from-the-command-line', [TOKEN_IN_PS_WARNING]],
    ['--token-file', { tokenFile: true }, undefined, 'from-the-token-file-0123', []],
    ['$SWITCHYARD_TOKEN', {}, 'from-the-environment-0123', 'from-the-environment-0123', []],
    ['<--data-dir>/token', { dataDir: true }, undefined, 'from-the-data-dir-0123456', []],
  ] as const)('takes the token from %s, warning only for --token', async (_source, given, env, expected, warnings) => {
    const dir = await tempDir();
    await writeFile(join(dir, 'file-token'), 'from-the-token-file-0123\n');
    await writeFile(join(dir, 'token'), 'from-the-data-dir-0123456\n');
    if (env === undefined) delete process.env['SWITCHYARD_TOKEN'];
    else process.env['SWITCHYARD_TOKEN'] = env;
    const flags = {
      token: 'token' in given ? given.token : undefined,
      'token-file': 'tokenFile' in given ? join(dir, 'file-token') : undefined,
      'data-dir': 'dataDir' in given ? dir : undefined,
    };
    const warned: string[] = [];
    expect(await gatewayTarget(flags, URL, (line) => warned.push(line))).toEqual({ url: URL, token: expected });
    expect(warned).toEqual(warnings);
  });

  it('the warning says why and what to use instead', () => {
    expect(TOKEN_IN_PS_WARNING).toMatch(/every user of this machine/);
    expect(TOKEN_IN_PS_WARNING).toContain('--token-file');
    expect(TOKEN_IN_PS_WARNING).toContain('$SWITCHYARD_TOKEN');
  });
});
