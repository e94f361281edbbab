/*
 * Imports modules of the inspector page (src/gateway/inspector-page/assets/) as the browser
 * does — ES modules, as they ship, with no build step in between — so their pure parts are
 * tested here. The path is given at run time: the page's modules are checked JavaScript
 * (tsconfig.inspector.json), outside this project's TypeScript program, so the tests say
 * which of their exports they read.
 */
import { pathToFileURL } from 'node:url';
import { fileURLToPath } from 'node:url';

/** The file of the page's asset `file` (e.g. 'run-replay.js'). */
export const inspectorAsset = (file: string) =>
  fileURLToPath(new URL(`../../src/gateway/inspector-page/assets/${file}`, import.meta.url));

/** The module `file` of the page, typed as the test reads it. */
export async function importInspectorModule<T>(file: string): Promise<T> {
  return (await import(pathToFileURL(inspectorAsset(file)).href)) as T;
}
