import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Claims } from '../../src/concurrency/index.js';
import { bashTimeoutMs, bashTool } from '../../src/tools/builtins/bash.js';
import type { SandboxSettings, ToolContext } from '../../src/tools/tool.js';
import { hasBwrap } from '../support/real-parts.js';
import { sandboxWorkspace } from '../sandbox/sandbox-workspace.js';

const bwrap = await hasBwrap('the bash tool test inside bubblewrap');

const unsandboxed: SandboxSettings = {
  backend: 'none',
  allowUnsandboxed: true,
  network: false,
  maxOutputBytes: 1 << 20,
  commandTimeoutMs: 10_000,
};

let workspace: string;
beforeEach(async () => {
  workspace = await sandboxWorkspace('switchyard-bash-');
});
afterEach(async () => {
  await rm(workspace, { recursive: true, force: true });
});

function context(overrides: Partial<ToolContext> = {}): ToolContext {
  return {
    signal: new AbortController().signal,
    workspace,
    callId: 'call-1',
    runId: 'run-1',
    sessionId: 'session-1',
    sandbox: unsandboxed,
    ...overrides,
  };
}

function bash(input: { command: string; cwd?: string; timeoutMs?: number }, overrides: Partial<ToolContext> = {}) {
  return bashTool.execute(bashTool.input.parse(input), context(overrides));
}

describe('bash tool: declaration', () => {
  it('claims what the command touches, derived from it (docs/bash-claims.md)', () => {
    expect(bashTool.name).toBe('bash');
    const claim = (command: string, cwd?: string) =>
      bashTool.concurrencyClaim?.({ command, ...(cwd ? { cwd } : {}) }, { workspace, sessionId: 's' });
    expect(claim('ls')).toEqual(Claims.shared([workspace]));
    expect(claim('rg -n TODO src')).toEqual(Claims.shared([path.join(workspace, 'src')]));
    expect(claim('ls', 'sub')).toEqual(Claims.shared([path.join(workspace, 'sub')]));
    expect(claim('echo hi > out.txt')).toEqual(Claims.paths([path.join(workspace, 'out.txt')]));
    expect(claim('npm test')).toEqual(Claims.global());
    // A cwd outside the workspace fails when the call runs; until then it could be anywhere.
    expect(claim('ls', '..')).toEqual(Claims.global());
  });

  it('rejects an empty command and a non-positive timeout', () => {
    expect(bashTool.input.safeParse({ command: '' }).success).toBe(false);
    expect(bashTool.input.safeParse({ command: 'ls', timeoutMs: 0 }).success).toBe(false);
  });
});

describe('bash tool: running', () => {
  it('runs in the workspace with HOME there and returns what the model needs', async () => {
    const result = await bash({ command: 'pwd; echo "$HOME"; exit 3' });
    expect(result).toEqual({
      exitCode: 3,
      signal: null,
      output: `${workspace}\n${workspace}\n`,
      truncated: false,
      timedOut: false,
      durationMs: expect.any(Number),
      sandbox: 'none',
    });
  });

  it('gives the command a minimal environment', async () => {
    process.env.SWITCHYARD_TEST_SECRET = 'leak';
    try {
      const result = (await bash({ command: 'env | cut -d= -f1 | sort' })) as { output: string };
      const names = result.output.trim().split('\n');
      expect(names).toEqual(expect.arrayContaining(['GIT_OPTIONAL_LOCKS', 'HOME', 'LANG', 'PATH']));
      expect(names).not.toContain('SWITCHYARD_TEST_SECRET');
      // The allow-list passes locale, time zone and terminal through; the shell adds PWD, SHLVL and _ itself;
      // GIT_OPTIONAL_LOCKS keeps `git status` a read, as its claim says.
      const allowed = /^(HOME|PATH|LANG|LANGUAGE|LC_[A-Z]+|TZ|TERM|GIT_OPTIONAL_LOCKS|PWD|SHLVL|_)$/;
      expect(names.filter((name) => !allowed.test(name))).toEqual([]);
    } finally {
      delete process.env.SWITCHYARD_TEST_SECRET;
    }
  });

  it('refuses to run unsandboxed unless the operator allowed it', async () => {
    const attempt = bash({ command: 'touch ran' }, { sandbox: { ...unsandboxed, allowUnsandboxed: false } });
    await expect(attempt).rejects.toMatchObject({ name: 'ToolError', code: 'invalid_request' });
    await expect(attempt).rejects.toThrow(/allow_unsandboxed = true/);
  });

  it.each([
    ['a relative subdirectory', 'sub', 'sub'],
    ['a path that climbs back in', 'sub/../sub', 'sub'],
    ['the workspace itself', '.', ''],
  ])('cwd: %s', async (_description, cwd, expected) => {
    await mkdir(path.join(workspace, 'sub'));
    const result = (await bash({ command: 'pwd', cwd })) as { output: string };
    expect(result.output).toBe(`${path.join(workspace, expected)}\n`);
  });

  it('cwd: an absolute path inside the workspace', async () => {
    await mkdir(path.join(workspace, 'sub'));
    const result = (await bash({ command: 'pwd', cwd: path.join(workspace, 'sub') })) as { output: string };
    expect(result.output).toBe(`${workspace}/sub\n`);
  });

  it.each<[string, (workspace: string) => string]>([
    ['the parent', () => '..'],
    ['a sibling sharing the prefix', (workspace) => `../${path.basename(workspace)}-evil`],
    ['an absolute path elsewhere', () => '/etc'],
  ])('cwd outside the workspace is refused: %s', async (_description, cwd) => {
    await expect(bash({ command: 'pwd', cwd: cwd(workspace) })).rejects.toMatchObject({
      name: 'ToolError',
      code: 'outside_workspace',
    });
  });

  it('caps the output at the sandbox budget', async () => {
    const result = await bash({ command: 'yes | head -c 100000' }, { sandbox: { ...unsandboxed, maxOutputBytes: 10 } });
    expect(result).toMatchObject({
      exitCode: 0,
      truncated: true,
      output: `${'y\n'.repeat(5)}\n…[output truncated: 99990 bytes omitted]`,
    });
  });

  it.skipIf(!bwrap)('runs inside bubblewrap by default and warns of nothing', async () => {
    const warnings: string[] = [];
    const result = await bash(
      { command: 'echo hi > f && cat f && touch /usr/x' },
      { sandbox: undefined, warn: (message) => warnings.push(message) },
    );
    expect(result).toMatchObject({ sandbox: 'bwrap', output: expect.stringMatching(/^hi\n.*Read-only file system/s) });
    expect(warnings).toEqual([]);
  });
});

describe('bash tool: limits', () => {
  it.each<[string, { timeoutMs?: number }, Pick<ToolContext, 'sandbox' | 'timeoutMs'>, number]>([
    ['nothing set: 60 s', {}, {}, 60_000],
    ['the call asks for less', { timeoutMs: 5_000 }, { sandbox: unsandboxed, timeoutMs: 30_000 }, 5_000],
    [
      'the sandbox per-command limit is smaller',
      { timeoutMs: 50_000 },
      { sandbox: unsandboxed, timeoutMs: 30_000 },
      10_000,
    ],
    ['the tool-call time left is smaller', { timeoutMs: 50_000 }, { sandbox: unsandboxed, timeoutMs: 2_000 }, 2_000],
    ['the call cannot ask for more than the sandbox allows', { timeoutMs: 500_000 }, { sandbox: unsandboxed }, 10_000],
    ['only the call sets one', { timeoutMs: 500_000 }, {}, 500_000],
    ['only the tool-call time left', {}, { timeoutMs: 1_234 }, 1_234],
  ])('timeout: %s', (_description, input, ctx, expected) => {
    expect(bashTimeoutMs(input, ctx)).toBe(expected);
  });

  it('a timed-out command is a timeout error carrying the partial output', async () => {
    // Long enough for the shell to start and print before the timeout, also on a loaded machine.
    const attempt = bash(
      { command: 'echo "  started  "; sleep 30' },
      { sandbox: { ...unsandboxed, commandTimeoutMs: 2_000 } },
    );
    await expect(attempt).rejects.toMatchObject({ name: 'ToolError', code: 'timeout' });
    await expect(attempt).rejects.toThrow(/timed out after \d+ ms and was killed; output so far:\nstarted$/);
  });

  it('a cancelled command is a cancelled error', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 200);
    await expect(bash({ command: 'sleep 30' }, { signal: controller.signal })).rejects.toMatchObject({
      name: 'ToolError',
      code: 'cancelled',
    });
  });
});
