/*
 * File tools and sandboxed commands share a workspace: what one writes the other can change.
 * On a server running as root this is the workspace owner rule at work (commands run as the
 * unprivileged owner of the workspace, never as root, and the file tools give what they
 * create to that owner); on an unprivileged server both run as the server's user.
 */
import { statSync } from 'node:fs';
import { chmod } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { bashTool } from '../../src/tools/builtins/bash.js';
import { fileOpsTool } from '../../src/tools/builtins/file-ops.js';
import { fileReadTool } from '../../src/tools/builtins/file-read.js';
import { fileWriteTool } from '../../src/tools/builtins/file-write.js';
import type { AnyTool, SandboxSettings, ToolContext } from '../../src/tools/tool.js';
import { commandUser, hasBwrap } from '../support/real-parts.js';
import { tempDirs } from '../support/temp-dirs.js';

const root = process.getuid?.() === 0;
const bwrap = await hasBwrap('the workspace owner tests', commandUser());

const settings: SandboxSettings = {
  backend: 'bwrap',
  network: false,
  maxOutputBytes: 1 << 16,
  commandTimeoutMs: 20_000,
  unprivileged: { uid: 65534, gid: 65534 },
};

let base: string;
let workspace: string;
const tempDir = tempDirs('switchyard-owner-', 'afterEach');

beforeEach(async () => {
  base = await tempDir();
  await chmod(base, 0o755);
  workspace = join(base, 'w');
});

function call(tool: AnyTool, input: unknown): Promise<unknown> {
  const ctx: ToolContext = {
    signal: new AbortController().signal,
    workspace,
    callId: 'c',
    runId: 'r',
    sessionId: 's',
    sandbox: settings,
  };
  return tool.execute(tool.input.parse(input), ctx);
}

describe.skipIf(!bwrap)('file tools and commands share the workspace', () => {
  it('a command changes what file_write created, and file_read sees what the command wrote', async () => {
    await call(fileWriteTool, { path: 'src/notes.txt', content: 'from the tool\n' });
    await call(fileOpsTool, { operation: 'mkdir', path: 'build/out' });
    const result = (await call(bashTool, {
      command: 'echo from the command >> src/notes.txt && echo made > build/out/a && id -u',
    })) as { exitCode: number; output: string };
    expect(result.exitCode).toBe(0);
    expect(await call(fileReadTool, { path: 'src/notes.txt' })).toMatchObject({
      content: 'from the tool\nfrom the command\n',
    });
    if (root) {
      // Never root inside: the workspace went to the unprivileged user, and with it what the tools created.
      expect(result.output.trim().split('\n').at(-1)).toBe('65534');
      for (const path of ['.', 'src', 'src/notes.txt', 'build', 'build/out'])
        expect(statSync(join(workspace, path)).uid, path).toBe(65534);
    }
  });
});
