/*
 * A racing symlink swapper against every file tool. A separate process swaps the workspace
 * entry `d` between a real directory inside and a symlink to a directory outside, in a tight
 * loop, while each tool works on paths through `d`. Outside holds files with the same names and
 * a secret: an attempt wins when it reads the secret, or creates, changes, moves or deletes
 * anything outside. Whatever the interleaving, no attempt may win.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { realpath } from 'node:fs/promises';
import { setPriority } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyPatchTool } from '../../src/tools/builtins/apply-patch.js';
import { fileEditTool } from '../../src/tools/builtins/file-edit.js';
import { fileOpsTool } from '../../src/tools/builtins/file-ops.js';
import { fileReadTool } from '../../src/tools/builtins/file-read.js';
import { fileWriteTool } from '../../src/tools/builtins/file-write.js';
import type { AnyTool, ToolContext } from '../../src/tools/tool.js';
import { tempDirs } from '../support/temp-dirs.js';

const ATTEMPTS_PER_OPERATION = 60;
const SECRET = 'SWY-outside-secret';

interface Operation {
  name: string;
  tool: AnyTool;
  /** What the attempt asks; `i` makes its names unique. */
  input(i: number): unknown;
  /** Whether it reached outside, from its result and the state of the outside directory. */
  won(i: number, result: unknown): boolean;
}

type Outcome = 'inside' | 'refused' | 'missing' | 'other';

describe('a racing symlink swapper never wins against the file tools', () => {
  let base: string;
  let workspace: string;
  let outside: string;
  /** The real directory, held open: it is renamed back and forth, its descriptor stays. */
  let realFd: number;
  let swapper: ChildProcessWithoutNullStreams;
  const tally: Record<Outcome, number> = { inside: 0, refused: 0, missing: 0, other: 0 };
  let attempts = 0;

  const inReal = (name: string) => `/proc/self/fd/${realFd}/${name}`;
  const outsideFile = (name: string) => join(outside, name);
  const readOutside = (name: string) =>
    existsSync(outsideFile(name)) ? readFileSync(outsideFile(name), 'utf8') : undefined;
  const untouched = (i: number) => readOutside(`t${i}`) === `${SECRET} inside-x ${i}\n`;

  const tempDir = tempDirs('switchyard-race-', 'afterAll');

  beforeAll(async () => {
    base = await realpath(await tempDir());
    workspace = join(base, 'w');
    outside = join(base, 'outside');
    mkdirSync(join(workspace, 'd.real'), { recursive: true });
    mkdirSync(outside);
    writeFileSync(join(outside, 'only-outside'), SECRET);
    symlinkSync(outside, join(workspace, 'd.link'));
    realFd = openSync(join(workspace, 'd.real'), 'r');
    swapper = spawn(process.execPath, [join(import.meta.dirname, 'fixtures', 'symlink-swapper.mjs'), workspace]);
    await new Promise<void>((resolve) => swapper.stdout.once('data', () => resolve()));
    // It spins on a core; at the lowest priority it still races every call, without starving the tools on a busy machine.
    setPriority(swapper.pid ?? 0, 19);
  });

  afterAll(async () => {
    if (swapper.exitCode === null) swapper.kill('SIGKILL');
    closeSync(realFd);
  });

  /** Every name `i` uses, fresh inside (through the held descriptor) and outside. */
  function prepare(i: number): void {
    writeFileSync(inReal(`t${i}`), `inside-x ${i}\n`);
    writeFileSync(outsideFile(`t${i}`), `${SECRET} inside-x ${i}\n`);
    mkdirSync(inReal(`s${i}`));
    writeFileSync(inReal(`s${i}/x`), 'inside');
    mkdirSync(outsideFile(`s${i}`));
    writeFileSync(outsideFile(`s${i}/x`), SECRET);
    writeFileSync(join(workspace, `src${i}`), `inside source ${i}\n`);
  }

  const operations: Operation[] = [
    {
      name: 'file_read',
      tool: fileReadTool,
      input: (i) => ({ path: `d/t${i}` }),
      won: (_i, result) => String(JSON.stringify(result)).includes(SECRET),
    },
    {
      name: 'file_write (replace)',
      tool: fileWriteTool,
      input: (i) => ({ path: `d/t${i}`, content: 'overwritten' }),
      won: (i) => !untouched(i),
    },
    {
      name: 'file_write (create)',
      tool: fileWriteTool,
      input: (i) => ({ path: `d/n${i}`, content: 'created' }),
      won: (i) => existsSync(outsideFile(`n${i}`)),
    },
    {
      name: 'file_edit',
      tool: fileEditTool,
      input: (i) => ({ path: `d/t${i}`, old: 'inside-x', new: 'edited' }),
      won: (i) => !untouched(i),
    },
    {
      name: 'apply_patch (update, add)',
      tool: applyPatchTool,
      input: (i) => ({
        patch: [
          '*** Begin Patch',
          `*** Update File: d/t${i}`,
          '@@',
          `-inside-x ${i}`,
          '+patched',
          `*** Add File: d/n${i}`,
          '+added',
          '*** End Patch',
        ].join('\n'),
      }),
      won: (i) => !untouched(i) || existsSync(outsideFile(`n${i}`)),
    },
    {
      name: 'apply_patch (delete)',
      tool: applyPatchTool,
      input: (i) => ({ patch: ['*** Begin Patch', `*** Delete File: d/t${i}`, '*** End Patch'].join('\n') }),
      won: (i) => !untouched(i),
    },
    {
      name: 'file_ops list',
      tool: fileOpsTool,
      input: () => ({ operation: 'list', path: 'd', recursive: true }),
      won: (_i, result) => String(JSON.stringify(result)).includes('only-outside'),
    },
    {
      name: 'file_ops search',
      tool: fileOpsTool,
      input: () => ({ operation: 'search', path: 'd', pattern: 'SWY' }),
      won: (_i, result) => String(JSON.stringify(result)).includes(SECRET),
    },
    {
      name: 'file_ops stats',
      tool: fileOpsTool,
      input: () => ({ operation: 'stats', path: 'd/only-outside' }),
      won: (_i, result) => result !== undefined,
    },
    {
      name: 'file_ops copy (out of d)',
      tool: fileOpsTool,
      input: (i) => ({ operation: 'copy', path: `d/t${i}`, destination: `c${i}` }),
      won: (i) =>
        existsSync(join(workspace, `c${i}`)) && readFileSync(join(workspace, `c${i}`), 'utf8').includes(SECRET),
    },
    {
      name: 'file_ops copy (into d)',
      tool: fileOpsTool,
      input: (i) => ({ operation: 'copy', path: `src${i}`, destination: `d/n${i}` }),
      won: (i) => existsSync(outsideFile(`n${i}`)),
    },
    {
      name: 'file_ops move (out of d)',
      tool: fileOpsTool,
      input: (i) => ({ operation: 'move', path: `d/t${i}`, destination: `m${i}` }),
      won: (i) => !untouched(i),
    },
    {
      name: 'file_ops move (into d)',
      tool: fileOpsTool,
      input: (i) => ({ operation: 'move', path: `src${i}`, destination: `d/n${i}` }),
      won: (i) => existsSync(outsideFile(`n${i}`)),
    },
    {
      name: 'file_ops delete',
      tool: fileOpsTool,
      input: (i) => ({ operation: 'delete', path: `d/t${i}` }),
      won: (i) => !untouched(i),
    },
    {
      name: 'file_ops delete (recursive)',
      tool: fileOpsTool,
      input: (i) => ({ operation: 'delete', path: `d/s${i}`, recursive: true }),
      won: (i) => readOutside(`s${i}/x`) !== SECRET,
    },
    {
      name: 'file_ops mkdir',
      tool: fileOpsTool,
      input: (i) => ({ operation: 'mkdir', path: `d/n${i}/deeper` }),
      won: (i) => existsSync(outsideFile(`n${i}`)),
    },
  ];

  function context(): ToolContext {
    return {
      signal: new AbortController().signal,
      workspace,
      callId: 'race',
      runId: 'race-run',
      sessionId: 'race-session',
    };
  }

  function outcomeOf(error: unknown): Outcome {
    const code = (error as { code?: unknown } | undefined)?.code;
    if (error === undefined) return 'inside';
    if (code === 'outside_workspace') return 'refused';
    return code === 'not_found' || code === 'patch_failed' ? 'missing' : 'other';
  }

  let next = 0;
  it.each(operations.map((operation) => [operation.name, operation] as const))(
    `%s: ${ATTEMPTS_PER_OPERATION} attempts during the swaps, no win`,
    async (_name, operation) => {
      const wins: string[] = [];
      for (let attempt = 0; attempt < ATTEMPTS_PER_OPERATION; attempt++) {
        const i = next++;
        prepare(i);
        let result: unknown;
        let error: unknown;
        try {
          result = await operation.tool.execute(operation.tool.input.parse(operation.input(i)), context());
        } catch (thrown) {
          error = thrown;
        }
        tally[outcomeOf(error)] += 1;
        attempts += 1;
        if (operation.won(i, result)) wins.push(`attempt ${i}: ${JSON.stringify(result ?? String(error))}`);
        // Start the next attempt clean, inside and outside (a win would have changed the outside).
        for (const name of readdirSync(outside))
          if (name !== 'only-outside') rmSync(outsideFile(name), { recursive: true, force: true });
        for (const name of [`t${i}`, `s${i}`, `n${i}`]) rmSync(inReal(name), { recursive: true, force: true });
      }
      expect(wins).toEqual([]);
    },
  );

  it('the race was real: the swapper kept swapping and the tools met both the directory and the link', async () => {
    const done = new Promise<string>((resolve) => {
      let out = '';
      swapper.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
      swapper.on('close', () => resolve(out));
    });
    swapper.kill('SIGTERM');
    const swaps = Number((await done).trim());
    console.log(
      `symlink race: ${attempts} attempts over ${operations.length} file operations, 0 wins; ${swaps} swaps; ` +
        `outcomes: ${tally.inside} done inside, ${tally.refused} refused as outside, ${tally.missing} not found mid-swap, ${tally.other} other errors`,
    );
    expect(attempts).toBe(operations.length * ATTEMPTS_PER_OPERATION);
    expect(swaps).toBeGreaterThan(0);
    expect(tally.inside).toBeGreaterThan(0);
    expect(tally.refused).toBeGreaterThan(0);
  });
});
