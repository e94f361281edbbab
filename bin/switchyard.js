#!/usr/bin/env node
// The installed `switchyard` command: the compiled CLI in this same process, so a signal sent
// to the command reaches the server itself (no launcher in between to relay or swallow it).
import { existsSync } from 'node:fs';

const cli = new URL('../dist/src/cli.js', import.meta.url);
if (!existsSync(cli)) {
  process.stderr.write('switchyard: the package is not built (no dist/); run `npm run build` in its directory\n');
  process.exit(1);
}
await import(cli.href);
