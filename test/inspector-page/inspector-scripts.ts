/*
 * Loads scripts of the inspector page (src/gateway/inspector-page/assets/) into a fresh V8 context,
 * as the browser runs them — plain scripts that add to `globalThis.SwitchyardInspector` — so
 * their pure parts are tested here as they ship, with no build step in between.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createContext, runInContext } from 'node:vm';

const assets = (file: string) =>
  fileURLToPath(new URL(`../../src/gateway/inspector-page/assets/${file}`, import.meta.url));

/** Runs the files in order in one new context and returns what they put on the page's namespace. */
export function loadInspectorScripts<T>(...files: string[]): T {
  const context = createContext({});
  for (const file of files) runInContext(readFileSync(assets(file), 'utf8'), context, { filename: file });
  return (context as { SwitchyardInspector: T }).SwitchyardInspector;
}
