/*
 * MCP tools against the real @modelcontextprotocol/server-filesystem, spawned over stdio on a
 * temporary directory: the annotations it really declares, real reads and writes, errors,
 * scheduling of its calls, and that close() ends the server process.
 */
import { execFileSync } from 'node:child_process';
import { readFile, realpath, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partitionParallelGroups, type Claim } from '../../src/concurrency/index.js';
import { ToolError, type ToolContext } from '../../src/tools/index.js';
import { connectMcpServer, type McpConnection, type McpTool } from '../../src/tools/mcp/index.js';
import { tempDirs } from '../support/temp-dirs.js';

const require = createRequire(import.meta.url);
const SERVER_ENTRY = join(
  dirname(require.resolve('@modelcontextprotocol/server-filesystem/package.json')),
  'dist/index.js',
);
const SPAWN_TIMEOUT = 20_000;

let dir: string;
let connection: McpConnection;

function tool(name: string): McpTool {
  const found = connection.tools.find((t) => t.name === `fs__${name}`);
  if (!found) throw new Error(`the filesystem server has no tool ${name}`);
  return found;
}

function context(): ToolContext {
  return { signal: new AbortController().signal, workspace: dir, callId: 'c1', runId: 'r1', sessionId: 's1' };
}

function claimOf(name: string, args: Record<string, unknown>): Claim {
  const t = tool(name);
  if (!t.concurrencyClaim) throw new Error(`${t.name} has no claim function`);
  return t.concurrencyClaim(args, { workspace: dir, sessionId: 's1' });
}

/** Child processes of this test process whose command line mentions the filesystem server. */
function serverPids(): number[] {
  const out = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(process.pid)], { encoding: 'utf8' });
  return out
    .split('\n')
    .filter((line) => line.includes('server-filesystem'))
    .map((line) => Number.parseInt(line.trim(), 10));
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const tempDir = tempDirs('switchyard-mcp-', 'afterAll');

beforeAll(async () => {
  // realpath: the server compares real paths, and the temp dir may sit behind a symlink.
  dir = await realpath(await tempDir());
  await writeFile(join(dir, 'a.txt'), 'alpha\n');
  await writeFile(join(dir, 'b.txt'), 'bravo\n');
  connection = await connectMcpServer('fs', { command: process.execPath, args: [SERVER_ENTRY, dir] });
}, SPAWN_TIMEOUT);

afterAll(async () => {
  await connection?.close();
});

describe('the filesystem server over stdio', () => {
  it('lists every tool under <id>__<name> with the server description and JSON schema', () => {
    const names = connection.tools.map((t) => t.name);
    expect(names).toEqual(
      expect.arrayContaining([
        'fs__read_text_file',
        'fs__read_multiple_files',
        'fs__write_file',
        'fs__edit_file',
        'fs__move_file',
        'fs__create_directory',
        'fs__list_directory',
      ]),
    );
    const read = tool('read_text_file');
    expect(read.description).toMatch(/read/i);
    expect(read.jsonSchema).toMatchObject({
      type: 'object',
      properties: { path: { type: 'string' } },
      required: ['path'],
    });
    expect(read.input.safeParse({ path: 'a.txt' }).success).toBe(true);
    expect(read.input.safeParse('a.txt').success).toBe(false);
  });

  // What the installed server (2026.8.31) declares: every read tool readOnlyHint: true;
  // write_file, edit_file, move_file destructiveHint: true (write_file also idempotentHint);
  // create_directory destructiveHint: false with idempotentHint: true.
  const profiles: [
    tool: string,
    readOnly: boolean,
    idempotent: boolean,
    destructive: boolean,
    claim: 'shared' | 'global',
  ][] = [
    ['read_file', true, false, false, 'shared'],
    ['read_text_file', true, false, false, 'shared'],
    ['read_media_file', true, false, false, 'shared'],
    ['read_multiple_files', true, false, false, 'shared'],
    ['list_directory', true, false, false, 'shared'],
    ['list_directory_with_sizes', true, false, false, 'shared'],
    ['directory_tree', true, false, false, 'shared'],
    ['search_files', true, false, false, 'shared'],
    ['get_file_info', true, false, false, 'shared'],
    ['list_allowed_directories', true, false, false, 'shared'],
    ['write_file', false, true, true, 'global'],
    ['edit_file', false, false, true, 'global'],
    ['move_file', false, false, true, 'global'],
    ['create_directory', false, true, false, 'global'],
  ];
  it.each(profiles)(
    '%s: readOnly %s, idempotent %s, destructive %s, claim %s',
    (name, readOnly, idempotent, destructive, claim) => {
      const t = tool(name);
      expect({
        readOnly: t.readOnly,
        idempotent: t.idempotent,
        destructive: t.destructive,
        requiresConfirmation: t.requiresConfirmation,
      }).toEqual({
        readOnly,
        idempotent,
        destructive,
        requiresConfirmation: destructive,
      });
      expect(claimOf(name, { path: join(dir, 'x'), source: join(dir, 'x'), destination: join(dir, 'y') }).kind).toBe(
        claim === 'shared' ? 'shared' : 'exclusive',
      );
    },
  );

  it('lists exactly the tools of that table, so a new server version shows up here', () => {
    expect(connection.tools.map((t) => t.name.slice('fs__'.length)).sort()).toEqual(
      profiles.map(([name]) => name).sort(),
    );
  });

  it('reads a file and returns all-text content as one string', async () => {
    await expect(tool('read_text_file').execute({ path: join(dir, 'a.txt') }, context())).resolves.toBe('alpha\n');
  });

  it('writes a file for real', async () => {
    const output = await tool('write_file').execute({ path: join(dir, 'c.txt'), content: 'charlie' }, context());
    expect(output).toMatch(/Successfully wrote/);
    expect(await readFile(join(dir, 'c.txt'), 'utf8')).toBe('charlie');
  });

  it('returns non-text content as { content } with the parts unchanged', async () => {
    await writeFile(join(dir, 'pixel.png'), Buffer.from('89504e470d0a1a0a', 'hex'));
    const output = await tool('read_media_file').execute({ path: join(dir, 'pixel.png') }, context());
    expect(output).toMatchObject({
      content: [
        { type: 'image', mimeType: 'image/png', data: Buffer.from('89504e470d0a1a0a', 'hex').toString('base64') },
      ],
    });
  });

  it.each([
    ['a missing file (relative: the server resolves it in its directory)', 'missing.txt', /ENOENT/],
    ['a path outside the allowed directory', '/etc/hostname', /outside allowed directories/],
  ])('reading %s throws ToolError mcp_error with the server message', async (_, path, message) => {
    const error = await tool('read_text_file')
      .execute({ path }, context())
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ToolError);
    expect(error).toMatchObject({ code: 'mcp_error', message: expect.stringMatching(message) });
  });

  it('leaves argument validation to the server: bad arguments are an mcp_error', async () => {
    await expect(tool('read_text_file').execute({ path: 42 }, context())).rejects.toMatchObject({ code: 'mcp_error' });
  });
});

describe('claims of filesystem calls', () => {
  it('a read tool declares the paths it reads; a write stays global whatever its arguments', () => {
    expect(claimOf('read_text_file', { path: `${dir}/src/../a.txt` })).toEqual({
      kind: 'shared',
      reads: [`${dir}/a.txt`],
    });
    expect(claimOf('read_multiple_files', { paths: [`${dir}/b.txt`, `${dir}/a.txt`] })).toEqual({
      kind: 'shared',
      reads: [`${dir}/a.txt`, `${dir}/b.txt`],
    });
    expect(claimOf('list_allowed_directories', {})).toEqual({ kind: 'shared' });
    expect(claimOf('write_file', { path: `${dir}/a.txt`, content: '' })).toEqual({
      kind: 'exclusive',
      scope: { kind: 'global' },
    });
    expect(claimOf('move_file', { source: `${dir}/a.txt`, destination: `${dir}/b.txt` })).toEqual({
      kind: 'exclusive',
      scope: { kind: 'global' },
    });
  });

  it('an unknown footprint stays plainly shared: a missing or non-string path', () => {
    expect(claimOf('read_text_file', {})).toEqual({ kind: 'shared' });
    expect(claimOf('read_multiple_files', { paths: [`${dir}/a.txt`, 7] })).toEqual({ kind: 'shared' });
  });

  it('a batch of reads forms one group; writes serialize', () => {
    const reads = [
      claimOf('read_text_file', { path: `${dir}/a.txt` }),
      claimOf('read_multiple_files', { paths: [`${dir}/a.txt`, `${dir}/b.txt`] }),
      claimOf('list_directory', { path: dir }),
      claimOf('get_file_info', { path: `${dir}/b.txt` }),
    ];
    expect(partitionParallelGroups(reads)).toEqual([[0, 4]]);

    const writes = [
      claimOf('write_file', { path: `${dir}/x.txt`, content: 'x' }),
      claimOf('write_file', { path: `${dir}/y.txt`, content: 'y' }),
      claimOf('create_directory', { path: `${dir}/d` }),
    ];
    expect(partitionParallelGroups(writes)).toEqual([
      [0, 1],
      [1, 2],
      [2, 3],
    ]);

    expect(partitionParallelGroups([...reads, ...writes, ...reads])).toEqual([
      [0, 4],
      [4, 5],
      [5, 6],
      [6, 7],
      [7, 11],
    ]);
  });
});

describe('close()', () => {
  it(
    'terminates the server process, and a call afterwards is mcp_unavailable',
    async () => {
      const before = new Set(serverPids());
      const own = await connectMcpServer('fs2', { command: process.execPath, args: [SERVER_ENTRY, dir] });
      const spawned = serverPids().filter((pid) => !before.has(pid));
      expect(spawned).toHaveLength(1);
      const pid = spawned[0] as number;
      expect(alive(pid)).toBe(true);

      await own.close();
      expect(alive(pid)).toBe(false);
      await own.close(); // twice is fine

      const read = own.tools.find((t) => t.name === 'fs2__read_text_file');
      await expect(read?.execute({ path: join(dir, 'a.txt') }, context())).rejects.toMatchObject({
        code: 'mcp_unavailable',
      });
    },
    SPAWN_TIMEOUT,
  );

  it(
    'a server that cannot start is reported with the end of its stderr',
    async () => {
      const error = await connectMcpServer('broken', {
        command: process.execPath,
        args: [SERVER_ENTRY, join(dir, 'no-such-dir')],
      }).catch((e: unknown) => e);
      expect(error).toMatchObject({ name: 'McpConnectionError', code: 'mcp_unavailable', serverId: 'broken' });
      expect((error as Error).message).toMatch(/MCP server "broken" .* did not start/);
      expect((error as Error).message).toMatch(/None of the specified directories are accessible/);
      expect((error as Error).message).toMatch(/\[mcp\.broken\]/);
    },
    SPAWN_TIMEOUT,
  );
});
