/* The rules that turn an MCP tool descriptor into a Switchyard profile, name and claim, as tables. */
import type { Tool as McpToolDescriptor, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import type { Claim } from '../../src/concurrency/index.js';
import {
  mcpClaimFunction,
  mcpToolName,
  profileFromAnnotations,
  type McpToolProfile,
} from '../../src/tools/mcp/index.js';

describe('profileFromAnnotations', () => {
  const cases: [annotations: ToolAnnotations | undefined, expected: McpToolProfile][] = [
    [undefined, { readOnly: false, idempotent: false, destructive: true, requiresConfirmation: false }],
    [{}, { readOnly: false, idempotent: false, destructive: true, requiresConfirmation: false }],
    [{ readOnlyHint: true }, { readOnly: true, idempotent: false, destructive: false, requiresConfirmation: false }],
    [
      { readOnlyHint: true, destructiveHint: true },
      { readOnly: true, idempotent: false, destructive: false, requiresConfirmation: false },
    ],
    [{ readOnlyHint: false }, { readOnly: false, idempotent: false, destructive: true, requiresConfirmation: false }],
    [{ destructiveHint: true }, { readOnly: false, idempotent: false, destructive: true, requiresConfirmation: true }],
    [
      { destructiveHint: false },
      { readOnly: false, idempotent: false, destructive: false, requiresConfirmation: false },
    ],
    [{ idempotentHint: true }, { readOnly: false, idempotent: true, destructive: true, requiresConfirmation: false }],
    [
      { idempotentHint: true, destructiveHint: false },
      { readOnly: false, idempotent: true, destructive: false, requiresConfirmation: false },
    ],
    [
      { openWorldHint: false, title: 'x' },
      { readOnly: false, idempotent: false, destructive: true, requiresConfirmation: false },
    ],
  ];
  it.each(cases)('%j -> %j', (annotations, expected) => {
    expect(profileFromAnnotations(annotations)).toEqual(expected);
  });
});

describe('mcpToolName', () => {
  it.each([
    ['fs', 'read_file', 'fs__read_file'],
    ['my-server.v2', 'get.thing', 'my-server.v2__get.thing'],
  ])('%s + %s -> %s unchanged', (server, tool, expected) => {
    expect(mcpToolName(server, tool)).toBe(expected);
  });

  it.each([
    ['srv', 'say hello'],
    ['srv', 'ünïcode/tool'],
    ['srv', 'x'.repeat(80)],
    ['a server', 'tool'],
  ])('%s + %s is sanitized to a valid, distinct name', (server, tool) => {
    const name = mcpToolName(server, tool);
    expect(name).toMatch(/^[A-Za-z0-9_.-]{1,64}$/);
    expect(name).toMatch(/_[0-9a-f]{8}$/);
    expect(mcpToolName(server, tool)).toBe(name);
  });

  it('names that differ only in a replaced character or beyond the cut stay distinct', () => {
    expect(mcpToolName('srv', 'a b')).not.toBe(mcpToolName('srv', 'a/b'));
    expect(mcpToolName('srv', `${'x'.repeat(70)}1`)).not.toBe(mcpToolName('srv', `${'x'.repeat(70)}2`));
  });
});

describe('mcpClaimFunction', () => {
  const GLOBAL: Claim = { kind: 'exclusive', scope: { kind: 'global' } };
  const descriptor = (properties: Record<string, object>): McpToolDescriptor => ({
    name: 't',
    inputSchema: { type: 'object', properties },
  });
  const withPath = descriptor({ path: { type: 'string' } });
  const withPaths = descriptor({ paths: { type: 'array', items: { type: 'string' } } });
  const withBoth = descriptor({ path: { type: 'string' }, paths: { type: 'array', items: { type: 'string' } } });
  const pathNotString = descriptor({ path: { type: 'object' } });
  const writeArgs = descriptor({
    path: { type: 'string' },
    source: { type: 'string' },
    destination: { type: 'string' },
  });

  const cases: [
    rule: string,
    tool: McpToolDescriptor,
    readOnly: boolean,
    args: Record<string, unknown>,
    expected: Claim,
  ][] = [
    ['read of a declared path', withPath, true, { path: '/w/a' }, { kind: 'shared', reads: ['/w/a'] }],
    ['read path is normalized lexically', withPath, true, { path: '/w/x/../a' }, { kind: 'shared', reads: ['/w/a'] }],
    [
      'relative read stays relative (server resolves it)',
      withPath,
      true,
      { path: 'a.txt' },
      { kind: 'shared', reads: ['a.txt'] },
    ],
    [
      'read of declared paths',
      withPaths,
      true,
      { paths: ['/w/b', '/w/a'] },
      { kind: 'shared', reads: ['/w/a', '/w/b'] },
    ],
    [
      'path and paths together',
      withBoth,
      true,
      { path: '/w/c', paths: ['/w/a'] },
      { kind: 'shared', reads: ['/w/a', '/w/c'] },
    ],
    ['missing path: unknown footprint', withPath, true, {}, { kind: 'shared' }],
    ['non-string path: unknown footprint', withPath, true, { path: 1 }, { kind: 'shared' }],
    [
      'one non-string entry in paths: unknown footprint',
      withPaths,
      true,
      { paths: ['/w/a', null] },
      { kind: 'shared' },
    ],
    ['schema does not declare path as a string', pathNotString, true, { path: '/w/a' }, { kind: 'shared' }],
    ['read tool without path arguments', descriptor({ q: { type: 'string' } }), true, { q: 'x' }, { kind: 'shared' }],
    [
      'write with path arguments stays global',
      writeArgs,
      false,
      { path: '/w/a', source: '/w/b', destination: '/w/c' },
      GLOBAL,
    ],
    ['write without arguments is global', descriptor({}), false, {}, GLOBAL],
  ];
  it.each(cases)('%s', (_, tool, readOnly, args, expected) => {
    expect(mcpClaimFunction(tool, readOnly)(args)).toEqual(expected);
  });
});
