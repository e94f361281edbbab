/*
 * Switchyard as people run it: `npm pack` of a checkout (its `prepare` builds dist/, as
 * `npm install` and `npm ci` do), then
 * - in the checkout, `npm start` (the main job) stopped the ways supervisors and terminals stop
 *   it, with runs in flight: SIGTERM to npm alone (docker stop, systemd KillMode=process),
 *   SIGTERM to the whole process group (systemd's default), SIGINT to the group (Ctrl-C),
 *   SIGTERM to the server. Each time the server itself gets the signal and stops gracefully
 *   (the runs finish, "stopped" is logged, exit 0) and npm exits after it, with its code: no
 *   wrapper relays the signal late or kills the server mid-way, and no server is left behind;
 * - the tarball installed into an empty Node 20 project without TypeScript or tsx, and there:
 *   the README's quick tour run with plain `node`, the types checked from `exports`,
 *   `npx switchyard run "hello"`, and `switchyard serve` answering a run, serving the
 *   inspector (its page, scripts and the statecharts its worker lays out) and exiting 0 on
 *   SIGTERM.
 * One file, so the package is built once.
 */
import { execFile, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, mkdir, readFile, readdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { clientOf, servedUrl, spawnServe } from '../cli/serve-child.js';
import { tempDirs } from '../support/temp-dirs.js';

/** A build, an install and several process starts on a loaded machine: generous. */
const TIMEOUT = 900_000;
const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const tempDir = tempDirs('switchyard-package-', 'afterAll');
const run = promisify(execFile);

/** What a checkout has that `npm pack` needs (not dist/, not node_modules/, which is shared). */
const CHECKOUT = [
  'package.json',
  'package-lock.json',
  'tsconfig.json',
  'tsconfig.build.json',
  'README.md',
  'scripts',
  'src',
  'machines',
  'bin',
  'docs',
];

let checkout: string;
let project: string;
/** The environment of a user's shell: no token, no TypeScript loader. */
const userEnv = { ...process.env, SWITCHYARD_TOKEN: '', NODE_OPTIONS: '' };

function succeeded(result: SpawnSyncReturns<string>, what: string): string {
  expect(result.status, `${what}:\n${result.stdout}\n${result.stderr}`).toBe(0);
  return result.stdout;
}

/** The README's quick tour, as a reader copies it. */
async function quickTour(): Promise<string> {
  const readme = await readFile(join(repoRoot, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Quick tour: the library'));
  const code = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
  expect(code).toContain("from 'switchyard'");
  return code!;
}

beforeAll(async () => {
  // A checkout of its own, so packing (which builds) leaves this one's dist/ alone.
  checkout = await tempDir();
  for (const entry of CHECKOUT) await cp(join(repoRoot, entry), join(checkout, entry), { recursive: true });
  await symlink(join(repoRoot, 'node_modules'), join(checkout, 'node_modules'));
  const packed = await tempDir();
  succeeded(
    spawnSync('npm', ['pack', '--pack-destination', packed], { cwd: checkout, encoding: 'utf8', env: userEnv }),
    'npm pack',
  );
  const [tarball] = (await readdir(packed)).filter((file) => file.endsWith('.tgz'));

  project = await tempDir();
  await writeFile(
    join(project, 'package.json'),
    JSON.stringify({ name: 'gateway-of-my-own', private: true, type: 'module' }),
  );
  // Dependencies from npm's cache where it has them; the registry only for what it lacks.
  succeeded(
    spawnSync('npm', ['install', join(packed, tarball!), '--prefer-offline', '--no-audit', '--no-fund'], {
      cwd: project,
      encoding: 'utf8',
      env: userEnv,
    }),
    'npm install of the tarball',
  );
}, TIMEOUT);

describe('the packed package installed in an empty project', { timeout: TIMEOUT }, () => {
  it('ships compiled JavaScript with declarations, no TypeScript sources and no TypeScript loader', async () => {
    const installed = join(project, 'node_modules', 'switchyard');
    const manifest = JSON.parse(await readFile(join(installed, 'package.json'), 'utf8')) as {
      exports: { '.': { types: string; import: string } };
    };
    expect(existsSync(join(installed, manifest.exports['.'].import))).toBe(true);
    expect(existsSync(join(installed, manifest.exports['.'].types))).toBe(true);
    expect(existsSync(join(installed, 'src'))).toBe(false);
    expect(existsSync(join(project, 'node_modules', 'tsx'))).toBe(false);
    expect(existsSync(join(project, 'node_modules', 'typescript'))).toBe(false);
  });

  it("runs the README's quick tour with plain node", async () => {
    await writeFile(join(project, 'quick-tour.mjs'), await quickTour());
    const { stdout } = await run(process.execPath, ['quick-tour.mjs'], { cwd: project, env: userEnv });
    expect(stdout).toContain('run.completed');
    expect(stdout).toContain("state: 'completed'");
    expect(stdout).toContain('Here is what a.md says.');
  });

  it('type-checks a program against the declarations that exports names', async () => {
    await writeFile(
      join(project, 'typed.ts'),
      "import { createEngine, type Engine, type RunRequest } from 'switchyard';\n" +
        "const request: RunRequest = { sessionId: 's', input: 'hi' };\n" +
        'const engine: Engine = await createEngine({});\n' +
        'await engine.submit(request);\n' +
        '// @ts-expect-error: the declarations are real, so a wrong option is an error\n' +
        'await createEngine({ no_such_option: 1 });\n',
    );
    await writeFile(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          types: [],
        },
        files: ['typed.ts'],
      }),
    );
    // The checker of this repository: the user's project has no TypeScript of its own.
    const tsc = join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc');
    const checked = spawnSync(process.execPath, [tsc, '-p', project], { cwd: project, encoding: 'utf8', env: userEnv });
    expect(checked.stdout + checked.stderr).toBe('');
    expect(checked.status).toBe(0);
  });

  it('npx switchyard run "hello" runs in-process', async () => {
    const { stdout } = await run('npx', ['switchyard', 'run', 'hello'], { cwd: project, env: userEnv });
    expect(stdout).toContain('# completed: done');
  });

  it('switchyard serve answers a run and serves the inspector, and exits 0 on SIGTERM', async () => {
    const dataDir = join(project, 'data');
    await mkdir(join(project, 'workspaces'));
    await writeFile(
      join(project, 'switchyard.toml'),
      `[sandbox]\nworkspace_root = ${JSON.stringify(join(project, 'workspaces'))}\n`,
    );
    // The installed command itself, as a supervisor runs it.
    const server = spawnServe(
      join(project, 'node_modules', '.bin', 'switchyard'),
      ['serve', '--port', '0', '--data-dir', dataDir, '--config', 'switchyard.toml'],
      {
        cwd: project,
        env: userEnv,
      },
    );
    const url = await servedUrl(server);
    const tokenFile = join(dataDir, 'token');

    const { stdout } = await run(
      'npx',
      ['switchyard', 'run', 'hello', '--gateway', url, '--token-file', tokenFile, '--session', 'packaged'],
      { cwd: project, env: userEnv },
    );
    expect(stdout).toMatch(/packaged\s+run#1\s+run\.completed\s+"done"/);

    const http = url.replace(/^ws/, 'http');
    const token = (await readFile(tokenFile, 'utf8')).trim();
    const get = async (path: string) => {
      const response = await fetch(`${http}${path}?token=${encodeURIComponent(token)}`);
      expect(response.status, path).toBe(200);
      return response.text();
    };
    expect(await get('/inspect')).toContain('<html');
    // The page is ES modules: every module app.js imports, and what they import, is served from the installed package.
    const modules = new Set(['/inspect/app.js']);
    for (const path of modules) {
      const text = await get(path);
      for (const [, spec] of text.matchAll(/(?:from|import)\s*["'](\.{1,2}\/[^"']+)["']/g))
        modules.add(new URL(spec!, `http://page${path}`).pathname);
    }
    expect([...modules]).toContain('/inspect/vendor/lit-html/lit-html.js');
    expect([...modules]).toContain('/inspect/views/actor-tree.js');
    expect(JSON.parse(await get('/inspect/machines.json'))).toMatchObject({
      machines: expect.arrayContaining([expect.objectContaining({})]),
    });
    const client = await clientOf(url, tokenFile);
    expect((await client.snapshot()).running).toEqual([]);

    server.child.kill('SIGTERM');
    expect(await server.exited).toEqual({ code: 0, signal: null });
    expect(server.logLines().at(-1)?.msg).toBe('stopped');
  });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A config whose model answers each run after a pause, so runs are in flight when the signal comes. */
async function slowConfig(dir: string): Promise<string> {
  const script = join(dir, 'slow.json');
  await writeFile(script, JSON.stringify([{ text: 'finished', delayMs: 2_000 }]));
  const config = join(dir, 'switchyard.toml');
  const workspaces = await tempDir();
  await writeFile(
    config,
    `[execution]\ndefault_model = "slow"\n[models.slow]\nkind = "scripted"\nscript = ` +
      `${JSON.stringify(script)}\n[sandbox]\nworkspace_root = ${JSON.stringify(workspaces)}\n`,
  );
  return config;
}

type Target = 'npm' | 'group' | 'server';

const RUNS = 3;

describe('npm start in the checkout, stopped by a signal with runs in flight', { timeout: TIMEOUT }, () => {
  it.each([
    ['SIGTERM to npm alone (docker stop, systemd KillMode=process)', 'SIGTERM', 'npm'],
    ['SIGTERM to the process group (systemd)', 'SIGTERM', 'group'],
    ['SIGINT to the process group (Ctrl-C in a terminal)', 'SIGINT', 'group'],
    ['SIGTERM to the server itself', 'SIGTERM', 'server'],
  ] as [string, NodeJS.Signals, Target][])(
    '%s: the server stops gracefully, npm exits 0 after it',
    async (_how, signal, target) => {
      const dir = await tempDir();
      const dataDir = join(dir, 'data');
      // detached: npm leads a process group of its own, as under a supervisor or a terminal.
      const npm = spawnServe(
        'npm',
        [
          'start',
          '--',
          '--port',
          '0',
          '--data-dir',
          dataDir,
          '--config',
          await slowConfig(dir),
          '--grace-seconds',
          '60',
        ],
        {
          cwd: checkout,
          detached: true,
          env: { ...process.env, SWITCHYARD_TOKEN: '' },
        },
      );
      const url = await servedUrl(npm);
      const serverPid = npm.logLines().find((line) => line.msg.startsWith('listening on'))!.pid!;
      expect(serverPid).not.toBe(npm.child.pid);
      const client = await clientOf(url, join(dataDir, 'token'));
      const runIds = [];
      for (let i = 0; i < RUNS; i += 1)
        runIds.push((await client.submit({ sessionId: `s${i}`, input: 'take your time' })).runId);
      const results = Promise.all(runIds.map((runId) => client.wait(runId)));

      const pid = target === 'npm' ? npm.child.pid! : target === 'group' ? -npm.child.pid! : serverPid;
      process.kill(pid, signal);

      const exit = await npm.exited;
      expect(alive(serverPid)).toBe(false);
      expect(exit, npm.stderr()).toEqual({ code: 0, signal: null });
      const messages = npm.logLines().map((line) => line.msg);
      expect(messages.some((msg) => msg.startsWith(`${signal}: shutting down`))).toBe(true);
      expect(messages.at(-1)).toBe('stopped');
      expect(messages.some((msg) => msg.startsWith('cancelling'))).toBe(false);
      expect(await results).toEqual(
        runIds.map((runId) => expect.objectContaining({ runId, state: 'completed', output: 'finished' })),
      );
    },
  );
});
