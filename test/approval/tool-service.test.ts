import { SimulatedClock } from 'xstate';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import {
  ApprovalGate,
  SessionGrants,
  type ApprovalRequest,
  type ApprovalTier,
  type ToolOverride,
} from '../../src/approval/index.js';
import type { CommandPolicy, CommandVerdict } from '../../src/sandbox/index.js';
import { bashTool, fileOpsTool, fileReadTool, fileWriteTool } from '../../src/tools/builtins/index.js';
import { defineTool, type AnyTool } from '../../src/tools/tool.js';
import { ToolService, type ToolServiceOptions } from '../../src/tools/tool-service.js';

const dropTable = defineTool({
  name: 'mcp_db__drop',
  description: 'drops a table',
  input: z.object({ table: z.string() }),
  destructive: true,
  requiresConfirmation: true,
  execute: () => Promise.resolve('dropped'),
});

const tools = new Map<string, AnyTool>(
  [bashTool, fileOpsTool, fileReadTool, fileWriteTool, dropTable].map((t) => [t.name, t]),
);

type Enforcement = NonNullable<CommandPolicy['enforcement']>;

/** Stands in for src/sandbox's evaluateCommand: a floor, a tunable block rule and a warn rule. */
function evaluateCommand(command: string, policy: CommandPolicy): CommandVerdict {
  if (command.includes('rm -rf /'))
    return { action: 'block', rule: 'rm_root', reason: 'deletes the filesystem root', floor: true };
  if (command.includes('| sh'))
    return {
      action: policy.enforcement === 'block' ? 'block' : 'warn',
      rule: 'pipe_to_shell',
      reason: 'runs a download',
    };
  if (command.includes('sudo')) return { action: 'warn', rule: 'sudo', reason: 'runs as root' };
  return { action: 'allow' };
}

function service(
  options: {
    tier?: ApprovalTier;
    tools?: Record<string, ToolOverride>;
    enforcement?: Enforcement;
    unattended?: boolean;
    gate?: ApprovalGate | null;
  } = {},
) {
  const settings = { tier: options.tier ?? 'auto', tools: options.tools ?? {} };
  const policy: { enforcement: Enforcement } = { enforcement: options.enforcement ?? 'warn' };
  const requested: ApprovalRequest[] = [];
  const gate =
    options.gate === null
      ? undefined
      : (options.gate ??
        new ApprovalGate({
          clock: new SimulatedClock(),
          timeoutMs: () => 120_000,
          grants: new SessionGrants(),
          onRequested: (r) => requested.push(r),
          onResolved: () => {},
        }));
  const serviceOptions: ToolServiceOptions = {
    tools,
    runId: 'run-1',
    sessionId: 'session-1',
    workspace: '/tmp/switchyard-approval-test',
    sandbox: { backend: 'none', network: false, maxOutputBytes: 1024, commandTimeoutMs: 1000 },
    unattended: options.unattended ?? false,
    warn: () => {},
    approvalConfig: () => settings,
    commandPolicy: () => policy,
    evaluateCommand,
    ...(gate ? { gate } : {}),
  };
  return { svc: new ToolService(serviceOptions), gate, requested, settings, policy };
}

const bash = (command: string, id = 'c1') => ({ id, name: 'bash', args: { command } });

describe('ToolService: command policy at admission', () => {
  it('a floor command is invalid with command_blocked, whatever the tier', () => {
    for (const tier of ['plan', 'ask', 'auto', 'full'] as const) {
      const { svc } = service({ tier, tools: { bash: 'allow' } });
      const call = svc.admit(bash('rm -rf / --no-preserve-root'));
      expect(call.invalid).toEqual({
        code: 'command_blocked',
        message: 'blocked by rm_root: deletes the filesystem root',
      });
      expect(call.commandVerdict).toMatchObject({ action: 'block', floor: true });
      expect(call.approval).toBeUndefined();
    }
  });

  it('a tunable rule blocks under enforcement "block" and only warns under "warn"', () => {
    expect(service({ enforcement: 'block' }).svc.admit(bash('curl x | sh')).invalid?.code).toBe('command_blocked');
    const warned = service({ enforcement: 'warn' }).svc.admit(bash('curl x | sh'));
    expect(warned.invalid).toBeUndefined();
    expect(warned.commandVerdict).toMatchObject({ action: 'warn', rule: 'pipe_to_shell' });
  });

  it('reads the policy at each admission (hot reload)', () => {
    const { svc, policy } = service();
    expect(svc.admit(bash('curl x | sh')).invalid).toBeUndefined();
    policy.enforcement = 'block';
    expect(svc.admit(bash('curl x | sh')).invalid?.code).toBe('command_blocked');
  });

  it('tools without commandOf are not judged', () => {
    const call = service().svc.admit({ id: 'c1', name: 'file_write', args: { path: 'rm -rf /', content: 'sudo' } });
    expect(call.commandVerdict).toBeUndefined();
  });
});

describe('ToolService: needsApproval per tier', () => {
  // tier | tool call | needs approval
  const rows: [ApprovalTier, string, { name: string; args: unknown }, boolean][] = [
    ['auto', 'plain command', { name: 'bash', args: { command: 'npm test' } }, false],
    ['auto', 'warned command', { name: 'bash', args: { command: 'sudo apt install x' } }, true],
    ['auto', 'file_ops delete', { name: 'file_ops', args: { operation: 'delete', path: 'a' } }, true],
    ['auto', 'file_ops move', { name: 'file_ops', args: { operation: 'move', path: 'a', destination: 'b' } }, true],
    ['auto', 'file_ops list', { name: 'file_ops', args: { operation: 'list', path: '.' } }, false],
    ['auto', 'requiresConfirmation tool', { name: 'mcp_db__drop', args: { table: 't' } }, true],
    ['ask', 'file_write (idempotent, still a write)', { name: 'file_write', args: { path: 'a', content: 'x' } }, true],
    ['ask', 'plain command', { name: 'bash', args: { command: 'npm test' } }, true],
    ['ask', 'file_read', { name: 'file_read', args: { path: 'a' } }, false],
    ['plan', 'file_write (denied, answered at once)', { name: 'file_write', args: { path: 'a', content: 'x' } }, true],
    ['plan', 'file_read', { name: 'file_read', args: { path: 'a' } }, false],
    ['full', 'warned command', { name: 'bash', args: { command: 'sudo reboot' } }, false],
    ['full', 'requiresConfirmation tool', { name: 'mcp_db__drop', args: { table: 't' } }, true],
  ];
  it.each(rows)('%s: %s → %s', (tier, _, request, expected) => {
    const { svc } = service({ tier });
    const call = svc.admit({ id: 'c1', ...request });
    expect(call.invalid).toBeUndefined();
    expect(svc.needsApproval(call)).toBe(expected);
  });

  it('reads [approval] at each admission (hot reload)', () => {
    const { svc, settings } = service({ tier: 'full' });
    expect(svc.needsApproval(svc.admit(bash('npm test')))).toBe(false);
    settings.tier = 'ask';
    expect(svc.needsApproval(svc.admit(bash('npm test')))).toBe(true);
  });

  it('without approvalConfig nothing is asked (approval off)', async () => {
    const svc = new ToolService({
      tools,
      runId: 'r',
      sessionId: 's',
      workspace: '/tmp/x',
      sandbox: { backend: 'none', network: false, maxOutputBytes: 1024, commandTimeoutMs: 1000 },
      unattended: false,
      warn: () => {},
    });
    const call = svc.admit({ id: 'c1', name: 'mcp_db__drop', args: { table: 't' } });
    expect(svc.needsApproval(call)).toBe(false);
    await expect(svc.approve(call)).resolves.toEqual({ allowed: true });
  });
});

describe('ToolService: approve()', () => {
  it('allowed calls are allowed without asking', async () => {
    const { svc, requested } = service({ tier: 'full' });
    await expect(svc.approve(svc.admit(bash('npm test')))).resolves.toEqual({ allowed: true });
    expect(requested).toEqual([]);
  });

  it('a denied call fails at once with approval_denied, asking nobody', async () => {
    const { svc, requested } = service({ tier: 'plan' });
    const verdict = await svc.approve(svc.admit({ id: 'c1', name: 'file_write', args: { path: 'a', content: 'x' } }));
    expect(verdict).toEqual({
      allowed: false,
      error: { code: 'approval_denied', message: 'tier "plan" denies file_write: it is not read-only; it was not run' },
    });
    expect(requested).toEqual([]);
  });

  it('a deny override fails at once', async () => {
    const { svc } = service({ tier: 'full', tools: { 'file_*': 'deny' } });
    const verdict = await svc.approve(svc.admit({ id: 'c1', name: 'file_read', args: { path: 'a' } }));
    expect(verdict).toMatchObject({
      allowed: false,
      error: { code: 'approval_denied', message: expect.stringContaining('"file_*"') },
    });
  });

  it('an ask goes to the gate with a redacted summary, the reason and the call id', async () => {
    const { svc, gate, requested } = service({ tier: 'auto' });
    const call = svc.admit(bash('API_TOKEN=abc sudo make install', 'call-7'));
    const verdict = svc.approve(call);
    expect(requested).toHaveLength(1);
    expect(requested[0]).toMatchObject({
      runId: 'run-1',
      sessionId: 'session-1',
      callId: 'call-7',
      tool: 'bash',
      action: { command: 'API_TOKEN=*** sudo make install', destructive: false },
      reason: 'tier "auto" asks before bash: the command policy warns (sudo: runs as root)',
    });
    gate!.respond(requested[0]!.approvalId, 'allow_once');
    await expect(verdict).resolves.toEqual({ allowed: true });
  });

  it('a destructive file operation is summarized as destructive', () => {
    const { svc, requested } = service({ tier: 'auto' });
    void svc.approve(
      svc.admit({ id: 'c1', name: 'file_ops', args: { operation: 'delete', path: 'build', recursive: true } }),
    );
    expect(requested[0]?.action).toMatchObject({
      summary: 'file_ops (destructive) delete build\n  recursive: true',
      paths: ['build'],
      destructive: true,
    });
  });

  it('allow_session covers the identical later call of a requiresConfirmation tool', async () => {
    const { svc, gate, requested } = service({ tier: 'full' });
    const first = svc.approve(svc.admit({ id: 'c1', name: 'mcp_db__drop', args: { table: 't' } }));
    gate!.respond(requested[0]!.approvalId, 'allow_session');
    await expect(first).resolves.toEqual({ allowed: true });
    const again = svc.admit({ id: 'c2', name: 'mcp_db__drop', args: { table: 't' } });
    expect(svc.needsApproval(again)).toBe(true);
    await expect(svc.approve(again)).resolves.toEqual({ allowed: true });
    expect(requested).toHaveLength(1);
    void svc.approve(svc.admit({ id: 'c3', name: 'mcp_db__drop', args: { table: 'u' } }));
    expect(requested).toHaveLength(2);
  });

  it('an unattended run fails closed with approval_unavailable', async () => {
    const { svc, requested } = service({ tier: 'auto', unattended: true });
    const verdict = await svc.approve(svc.admit(bash('sudo reboot')));
    expect(verdict).toMatchObject({ allowed: false, error: { code: 'approval_unavailable' } });
    expect(requested).toEqual([]);
  });

  it('without a gate an ask fails closed with approval_unavailable', async () => {
    const { svc } = service({ tier: 'auto', gate: null });
    const verdict = await svc.approve(svc.admit(bash('sudo reboot')));
    expect(verdict).toMatchObject({
      allowed: false,
      error: { code: 'approval_unavailable', message: expect.stringContaining('no approval surface') },
    });
  });

  it('passes the run signal to the gate: aborting it cancels the wait', async () => {
    const { svc, gate } = service({ tier: 'auto' });
    const controller = new AbortController();
    const verdict = svc.approve(svc.admit(bash('sudo reboot')), controller.signal);
    expect(gate!.pending()).toHaveLength(1);
    controller.abort();
    await expect(verdict).resolves.toMatchObject({ allowed: false, error: { code: 'cancelled' } });
    expect(gate!.pending()).toEqual([]);
  });

  it('the command policy judges the command as a hook rewrote it', () => {
    const { gate, requested } = service({ tier: 'auto' });
    const svc = new ToolService({
      tools,
      runId: 'run-1',
      sessionId: 'session-1',
      workspace: '/tmp/x',
      sandbox: { backend: 'none', network: false, maxOutputBytes: 1024, commandTimeoutMs: 1000 },
      unattended: false,
      warn: () => {},
      approvalConfig: () => ({ tier: 'auto', tools: {} }),
      commandPolicy: () => ({ enforcement: 'warn', rules: [] }),
      evaluateCommand,
      gate: gate!,
      rewriteArguments: ({ args }) => ({ ...(args as object), command: 'sudo rm -rf /' }),
    });
    const call = svc.admit(bash('sudo ls'));
    expect(call.rewritten).toBe(true);
    expect(call.invalid?.code).toBe('command_blocked');
    expect(requested).toEqual([]);
  });
});

describe('ToolService: a failing command policy fails closed', () => {
  it('blocks the command when the evaluator throws', () => {
    const svc = new ToolService({
      tools,
      runId: 'r',
      sessionId: 's',
      workspace: '/tmp/x',
      sandbox: { backend: 'none', network: false, maxOutputBytes: 1024, commandTimeoutMs: 1000 },
      unattended: false,
      warn: () => {},
      commandPolicy: () => ({ enforcement: 'warn', rules: [] }),
      evaluateCommand: () => {
        throw new Error('bad rule');
      },
    });
    expect(svc.admit(bash('ls')).invalid).toEqual({
      code: 'command_blocked',
      message: 'blocked by command_policy: the policy failed to evaluate the command (bad rule)',
    });
  });
});

describe('ToolService with the real command policy (src/sandbox evaluateCommand, the default)', () => {
  function real(tier: ApprovalTier, enforcement: Enforcement = 'warn', policy = true) {
    return new ToolService({
      tools,
      runId: 'r',
      sessionId: 's',
      workspace: '/tmp/x',
      sandbox: { backend: 'none', network: false, maxOutputBytes: 1024, commandTimeoutMs: 1000 },
      unattended: false,
      warn: () => {},
      approvalConfig: () => ({ tier, tools: { bash: 'allow' } }),
      ...(policy ? { commandPolicy: () => ({ enforcement, rules: [] }) } : {}),
    });
  }

  it.each([
    ['rm -rf /', 'full'],
    ['sudo rm -rf --no-preserve-root /', 'full'],
    [':(){ :|:& };:', 'auto'],
  ] as const)('the floor blocks %j in tier %s, over an allow override', (command, tier) => {
    const call = real(tier).admit(bash(command));
    expect(call.invalid).toMatchObject({
      code: 'command_blocked',
      message: expect.stringMatching(/^blocked by floor:/),
    });
  });

  it('the floor holds with enforcement "off" and with no policy configured', () => {
    expect(real('full', 'off').admit(bash('rm -rf /')).invalid?.code).toBe('command_blocked');
    expect(real('full', 'warn', false).admit(bash('rm -rf /')).invalid?.code).toBe('command_blocked');
  });

  it('a warned command (sudo) needs approval in auto unless an override allows bash', () => {
    const svc = new ToolService({
      tools,
      runId: 'r',
      sessionId: 's',
      workspace: '/tmp/x',
      sandbox: { backend: 'none', network: false, maxOutputBytes: 1024, commandTimeoutMs: 1000 },
      unattended: false,
      warn: () => {},
      approvalConfig: () => ({ tier: 'auto', tools: {} }),
    });
    const warned = svc.admit(bash('sudo apt-get install jq'));
    expect(warned.commandVerdict).toMatchObject({ action: 'warn', rule: 'sudo' });
    expect(svc.needsApproval(warned)).toBe(true);
    expect(svc.needsApproval(svc.admit(bash('ls -la')))).toBe(false);
    expect(real('auto').needsApproval(real('auto').admit(bash('sudo apt-get install jq')))).toBe(false);
  });

  it('enforcement "block" turns a tunable rule into command_blocked', () => {
    expect(real('full', 'block').admit(bash('sudo ls')).invalid).toMatchObject({
      code: 'command_blocked',
      message: expect.stringContaining('sudo'),
    });
  });
});
