/*
 * The gateway's and the client's files import one another without a cycle, type-only imports
 * included: shared constants and types (close codes, the logger, the protocol envelope) live
 * in files of their own, below everything that uses them.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const FOLDERS = ['src/gateway', 'src/client'];

function sourceFiles(folder: string): string[] {
  return readdirSync(join(root, folder), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => join(root, folder, file));
}

/** The files of these folders that `file` imports (relative specifiers, `import type` included). */
function importsOf(file: string, known: Set<string>): string[] {
  const text = readFileSync(file, 'utf8');
  const specifiers = [...text.matchAll(/(?:^|\n)\s*(?:import|export)\b[^'"]*?\bfrom\s+'(\.[^']+)'/g)].map((m) => m[1]!);
  return specifiers.map((s) => resolve(dirname(file), s.replace(/\.js$/, '.ts'))).filter((target) => known.has(target));
}

/** One cycle as a list of files, or undefined when the graph has none. */
function findCycle(graph: Map<string, string[]>): string[] | undefined {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (file: string): string[] | undefined => {
    if (state.get(file) === 'done') return undefined;
    if (state.get(file) === 'open') return [...path.slice(path.indexOf(file)), file];
    state.set(file, 'open');
    path.push(file);
    for (const target of graph.get(file) ?? []) {
      const cycle = visit(target);
      if (cycle) return cycle;
    }
    path.pop();
    state.set(file, 'done');
    return undefined;
  };
  for (const file of graph.keys()) {
    const cycle = visit(file);
    if (cycle) return cycle;
  }
  return undefined;
}

describe('imports of src/gateway and src/client', () => {
  const files = FOLDERS.flatMap(sourceFiles);
  const known = new Set(files);
  const graph = new Map(files.map((file) => [file, importsOf(file, known)]));

  it('are read: the connection imports the socket lifecycle and the close codes', () => {
    const connection = graph.get(join(root, 'src/gateway/connection.ts'))!.map((f) => relative(root, f));
    expect(connection).toEqual(
      expect.arrayContaining(['src/gateway/peer-socket.ts', 'src/gateway/close-codes.ts', 'src/gateway/logger.ts']),
    );
  });

  it('close no cycle', () => {
    expect(findCycle(graph)?.map((f) => relative(root, f))).toBeUndefined();
  });

  it('the cycle finder finds one when there is one', () => {
    expect(
      findCycle(
        new Map([
          ['a', ['b']],
          ['b', ['c']],
          ['c', ['a']],
        ]),
      ),
    ).toEqual(['a', 'b', 'c', 'a']);
  });
});
