/*
 * Resource limits inside the sandbox ([sandbox] max_processes, max_memory_bytes,
 * max_file_bytes), through the real bash tool under real bubblewrap: a fork bomb, a memory hog
 * and a disk filler are contained, killed, and leave the host able to work.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { CommandLimits } from '../../src/sandbox/command-limits.js';
import { bashTool } from '../../src/tools/builtins/bash.js';
import { sandboxWorkspace } from './sandbox-workspace.js';
import { eventually } from '../support/eventually.js';
import { commandUser, hasBwrap, hasPython3 } from '../support/real-parts.js';

const bwrap = await hasBwrap('the sandbox limit tests', commandUser());
const python3 = bwrap && hasPython3('the memory limit test');

const LIMITS: CommandLimits = { maxProcesses: 64, maxMemoryBytes: 256 * 1024 ** 2, maxFileBytes: 8 * 1024 ** 2 };

let workspace: string;
beforeEach(async () => {
  workspace = await sandboxWorkspace('switchyard-limits-');
});
afterEach(async () => {
  await rm(workspace, { recursive: true, force: true });
});

function bash(command: string, options: { limits?: CommandLimits; timeoutMs?: number } = {}) {
  return bashTool.execute(
    { command, timeoutMs: options.timeoutMs ?? 20_000 },
    {
      signal: new AbortController().signal,
      workspace,
      callId: 'limits',
      runId: 'limits-run',
      sessionId: 'limits-session',
      sandbox: {
        backend: 'bwrap',
        network: false,
        maxOutputBytes: 1 << 16,
        commandTimeoutMs: 60_000,
        ...(options.limits ? { limits: options.limits } : {}),
      },
    },
  ) as Promise<{ exitCode: number | null; signal: string | null; output: string; sandbox: string }>;
}

function children(parent: number): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .map(Number)
    .filter((pid) => {
      try {
        return /^PPid:\s+(\d+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] === String(parent);
      } catch {
        return false;
      }
    });
}

/** Host processes in the pid namespace of the sandbox this test process started (identified through bwrap's init). */
function sandboxProcessCount(namespace: string): number {
  let count = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readlinkSync(`/proc/${entry}/ns/pid`) === namespace) count += 1;
    } catch {
      // Exited while we looked.
    }
  }
  return count;
}

/** The pid namespace of our sandbox: bwrap (our child) -> its init, once it exists. */
function sandboxNamespace(): string | undefined {
  for (const outer of children(process.pid)) {
    for (const init of children(outer)) {
      const namespace = readlinkSync(`/proc/${init}/ns/pid`);
      if (namespace !== readlinkSync('/proc/self/ns/pid')) return namespace;
    }
  }
  return undefined;
}

describe.skipIf(!bwrap)('sandbox limits: contained and killed, the host unaffected', () => {
  it('a fork bomb stops at max_processes, is killed at the timeout, and the host keeps forking', async () => {
    const bomb = bash('bomb() { bomb | bomb & }; bomb; sleep 30', { limits: LIMITS, timeoutMs: 3_000 });
    let namespace: string | undefined;
    let peak = 0;
    let hostForks = 0;
    let settled = false;
    void bomb.finally(() => (settled = true)).catch(() => undefined);
    while (!settled) {
      namespace ??= sandboxNamespace();
      if (namespace !== undefined) peak = Math.max(peak, sandboxProcessCount(namespace));
      execFileSync('true');
      hostForks += 1;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    // Killed at the timeout, or collapsed on its own once every fork failed: either way the limit held it.
    const ended = await bomb.then(
      (result) => result.output,
      (error: Error & { code?: string }) => (error.code === 'timeout' ? error.message : Promise.reject(error)),
    );
    expect(ended).toContain('Resource temporarily unavailable');
    console.log(
      `fork bomb: at most ${peak} processes in the sandbox (max_processes ${LIMITS.maxProcesses}); the host forked ${hostForks} times meanwhile`,
    );
    expect(namespace).toBeDefined();
    // The bomb did fill its quota: it was a real fork bomb, stopped by the limit, not by a slow machine.
    expect(peak).toBeGreaterThan(LIMITS.maxProcesses / 2);
    expect(peak).toBeLessThanOrEqual(LIMITS.maxProcesses);
    expect(hostForks).toBeGreaterThan(0);
    await eventually(() => sandboxProcessCount(namespace ?? '') === 0, 'the sandbox has no process left', {
      withinMs: 15_000,
      everyMs: 50,
    });
  });

  it.skipIf(!python3)('a memory hog fails its allocation at max_memory_bytes', async () => {
    const result = await bash('python3 -c "b = bytearray(1 << 30); print(\'allocated a GiB\')"', { limits: LIMITS });
    expect(result.exitCode).toBe(1);
    expect(result.output).toContain('MemoryError');
    expect(result.output).not.toContain('allocated a GiB');
  });

  it('a memory hog made of coreutils fails too (tail buffering a stream without newlines)', async () => {
    const result = await bash('head -c 1G /dev/zero | tail -n 1 > /dev/null; echo "tail exit ${PIPESTATUS[1]}"', {
      limits: LIMITS,
    });
    expect(result.output).toMatch(/memory exhausted|Cannot allocate memory/);
    expect(result.output).toMatch(/tail exit [1-9]/);
  });

  it('a disk filler is stopped at max_file_bytes (SIGXFSZ) and the file never grows past it', async () => {
    const result = await bash('head -c 512M /dev/zero > big; echo "head exit $?"; stat -c %s big', { limits: LIMITS });
    expect(result.output).toMatch(/File size limit exceeded/);
    // 128 + SIGXFSZ (25)
    expect(result.output).toContain('head exit 153');
    expect(statSync(join(workspace, 'big')).size).toBe(LIMITS.maxFileBytes);
  });

  it('the private /tmp holds at most max_file_bytes: many small files run out of space', async () => {
    const result = await bash(
      'for i in $(seq 1 64); do head -c 1M /dev/zero > /tmp/f$i || break; done; cat /tmp/f* | wc -c',
      { limits: LIMITS },
    );
    expect(result.output).toMatch(/No space left on device/);
    const bytes = Number(result.output.trim().split('\n').at(-1));
    expect(bytes).toBeLessThanOrEqual(LIMITS.maxFileBytes);
    expect(bytes).toBeGreaterThan(LIMITS.maxFileBytes / 2);
  });

  it('the default limits leave room for ordinary tools: node, a pipeline, a few hundred processes in sequence', async () => {
    const result = await bash(
      `'${process.execPath}' -e 'console.log(require("os").cpus().length > 0)'; for i in $(seq 1 200); ` +
        `do true & done; wait; seq 1 100000 | sort -n | tail -n 1`,
    );
    expect(result).toMatchObject({ exitCode: 0, sandbox: 'bwrap' });
    expect(result.output).toBe('true\n100000\n');
  });
});
