/*
 * The die-with-server trials (docs/sandbox.md, "A command dies with its server"): many stand-in
 * servers (fixtures/die-with-server.ts), each SIGKILLed at another moment around the start of
 * its command; afterwards no marker the command would have written may exist and no process
 * carrying the trial's token may be alive (/proc scanned). Used by die-with-server.test.ts and,
 * with more trials, by `npm run trials:die-with-server`.
 */
import { spawn } from 'node:child_process';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { build } from 'esbuild';
import { sandboxWorkspace } from './sandbox-workspace.js';

/** How long the command sleeps before it writes its markers (the fixture's `sleep 0.3`). */
export const COMMAND_DELAY_MS = 300;

export interface TrialFigures {
  backend: 'bwrap' | 'none';
  trials: number;
  /** Stand-in servers that died by the SIGKILL (the others finished before their moment). */
  killed: number;
  /** Trials whose server's kill came late, after the command had written (a loaded machine): left out of the count below. */
  writtenBeforeKill: number;
  /** Markers found afterwards in the other trials' workspaces: written after their server died. */
  markersWritten: number;
  /** Processes carrying a trial's token still alive after the command's delay and a margin. */
  processesLeft: number;
  /** The command's start-up as the control run measured it, and the kill moments spread over it. */
  startUpMs: number;
  offsetsMs: number[];
  /** The control run (never killed) wrote its markers (2 with bwrap, 1 without): they do show a command that ran. */
  controlMarkers: number;
}

/** Bundles the fixture into one file a plain `node` starts quickly (tsx would take seconds per trial under load). */
export async function bundleFixture(dir: string): Promise<string> {
  const outfile = join(dir, 'die-with-server.mjs');
  await build({
    entryPoints: [resolve(import.meta.dirname, 'fixtures/die-with-server.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile,
    logLevel: 'warning',
    banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" },
  });
  return outfile;
}

interface Exit {
  signal: NodeJS.Signals | null;
  code: number | null;
  stdout: string;
}

function runFixture(fixture: string, workspace: string, backend: string, killAfter: string, token: string) {
  // Unsandboxed, only the command's own shell is held to the server (no pid namespace).
  const shape = backend === 'none' ? ['foreground'] : [];
  return new Promise<Exit>((done, fail) => {
    const child = spawn(process.execPath, [fixture, workspace, backend, killAfter, token, ...shape], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.on('error', fail);
    child.on('close', (code, signal) => done({ code, signal, stdout }));
  });
}

async function markersIn(workspace: string): Promise<number> {
  return (await readdir(workspace)).filter((name) => name.startsWith('marker')).length;
}

/** Live processes whose environment carries one of the tokens (zombies have none, so they are not counted). */
export async function processesWith(tokens: ReadonlySet<string>): Promise<number[]> {
  const found: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const environ = await readFile(`/proc/${entry}/environ`, 'latin1').catch(() => '');
    const token = /(?:^|\0)SWITCHYARD_TRIAL=([^\0]*)/.exec(environ)?.[1];
    if (token !== undefined && tokens.has(token)) found.push(Number(entry));
  }
  return found;
}

export async function runTrials(options: {
  fixture: string;
  backend: 'bwrap' | 'none';
  trials: number;
  parallel: number;
}): Promise<TrialFigures> {
  const { fixture, backend, trials, parallel } = options;
  const prefix = `switchyard-die-${backend}-`;
  const control = await sandboxWorkspace(prefix);
  const controlRun = await runFixture(fixture, control, backend, 'never', `control-${process.pid}`);
  const controlMs = (JSON.parse(controlRun.stdout) as { ms: number }).ms;
  const startUpMs = Math.max(20, controlMs - COMMAND_DELAY_MS);
  // From the start of runCommand to well past the command's start, evenly.
  // (capped, so that the last moments still come before the command's write).
  // A moment close to the write itself can land as the shell opens the marker (an empty marker:
  // the kill cut it off mid-write), so the last moment stays 200 ms before it.
  const span = Math.min(startUpMs * 1.5, startUpMs + COMMAND_DELAY_MS - 200);
  const offsetsMs = Array.from({ length: trials }, (_, i) => Math.round((i * span * 10) / (trials - 1)) / 10);
  const workspaces: { workspace: string; offsetMs: number }[] = [];
  const tokens = new Set<string>();
  let killed = 0;
  let next = 0;
  const worker = async () => {
    while (next < offsetsMs.length) {
      const i = next++;
      const workspace = await sandboxWorkspace(prefix);
      const token = `trial-${process.pid}-${backend}-${i}`;
      workspaces.push({ workspace, offsetMs: offsetsMs[i]! });
      tokens.add(token);
      await writeFile(join(workspace, '.trial'), token);
      const exit = await runFixture(fixture, workspace, backend, String(offsetsMs[i]), token);
      if (exit.signal === 'SIGKILL') killed += 1;
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
  // Long enough for a surviving command to have written its markers, whatever the load.
  const settleUntil = Date.now() + COMMAND_DELAY_MS + 3_000;
  let left = await processesWith(tokens);
  while (left.length > 0 && Date.now() < settleUntil) {
    await new Promise((r) => setTimeout(r, 100));
    left = await processesWith(tokens);
  }
  await new Promise((r) => setTimeout(r, Math.max(0, settleUntil - Date.now())));
  left = await processesWith(tokens);
  let markersWritten = 0;
  let writtenBeforeKill = 0;
  for (const { workspace, offsetMs } of workspaces) {
    // A trial whose server was killed late (after the write) proves nothing either way.
    const before = await readFile(join(workspace, '.written-before-kill'), 'utf8').catch(() => undefined);
    if (before === undefined) {
      const found = await markersIn(workspace);
      markersWritten += found;
      if (found > 0) {
        const marks = await Promise.all(
          (await readdir(workspace))
            .filter((n) => n.startsWith('marker'))
            .map(async (n) => `${n}=${(await readFile(join(workspace, n), 'utf8')).trim()}`),
        );
        console.error(`written after the kill: ${workspace} ${marks.join(' ')}, kill at ${offsetMs} ms`);
      }
    } else writtenBeforeKill += 1;
  }
  // Whatever survived was started by these trials: end it, by pid.
  for (const pid of left) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
  return {
    backend,
    trials,
    killed,
    writtenBeforeKill,
    markersWritten,
    processesLeft: left.length,
    startUpMs: Math.round(startUpMs),
    offsetsMs,
    controlMarkers: await markersIn(control),
  };
}
