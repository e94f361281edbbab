/*
 * Every optional option of the engine, the gateway and the stores says what happens when it is
 * left out: a `@default` tag in its JSDoc (issue 26.7). Read with the TypeScript compiler API,
 * so a member is a member whatever its formatting, and the tag is the parsed tag.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = new URL('../../', import.meta.url).pathname;

/** file → the option interfaces it declares. Every `*Options` interface of src/store/ counts. */
const OPTION_INTERFACES: Record<string, string[]> = {
  'src/engine/create-engine.ts': ['EngineOptions'],
  'src/gateway/gateway.ts': ['GatewayOptions'],
  ...Object.fromEntries(
    readdirSync(join(root, 'src/store'))
      .filter((name) => name.endsWith('.ts'))
      .map((name): [string, string[]] => [
        `src/store/${name}`,
        optionInterfacesOf(`src/store/${name}`).map((i) => i.name.text),
      ])
      .filter(([, names]) => names.length > 0),
  ),
};

function sourceOf(file: string): ts.SourceFile {
  return ts.createSourceFile(file, readFileSync(join(root, file), 'utf8'), ts.ScriptTarget.Latest, true);
}

function optionInterfacesOf(file: string): ts.InterfaceDeclaration[] {
  return sourceOf(file).statements.filter(
    (s): s is ts.InterfaceDeclaration => ts.isInterfaceDeclaration(s) && s.name.text.endsWith('Options'),
  );
}

function interfaceIn(file: string, name: string): ts.InterfaceDeclaration | undefined {
  return sourceOf(file).statements.find(
    (s): s is ts.InterfaceDeclaration => ts.isInterfaceDeclaration(s) && s.name.text === name,
  );
}

function hasDefaultTag(member: ts.TypeElement): boolean {
  return ts.getJSDocTags(member).some((tag) => {
    if (tag.tagName.text !== 'default') return false;
    const text = typeof tag.comment === 'string' ? tag.comment : ts.getTextOfJSDocComment(tag.comment);
    return (text ?? '').trim() !== '';
  });
}

describe('option defaults are documented', () => {
  it('finds the interfaces it checks', () => {
    for (const [file, names] of Object.entries(OPTION_INTERFACES)) {
      for (const name of names) expect(interfaceIn(file, name), `${file}: ${name}`).toBeDefined();
    }
    expect(Object.values(OPTION_INTERFACES).flat()).toEqual(
      expect.arrayContaining(['EngineOptions', 'GatewayOptions', 'LowdbStoreOptions', 'RedisStoreOptions']),
    );
  });

  it('every optional member has a non-empty @default in its JSDoc', () => {
    const missing: string[] = [];
    let checked = 0;
    for (const [file, names] of Object.entries(OPTION_INTERFACES)) {
      for (const name of names) {
        for (const member of interfaceIn(file, name)!.members) {
          if (member.questionToken === undefined) continue;
          checked += 1;
          if (!hasDefaultTag(member)) missing.push(`${file}: ${name}.${member.name?.getText() ?? '?'}`);
        }
      }
    }
    expect(checked).toBeGreaterThan(30);
    expect(missing).toEqual([]);
  });
});
