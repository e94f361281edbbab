/*
 * A running `switchyard serve` follows its config file, as an operator edits it: a saved live
 * key applies to the engine at once (engine.snapshot, the limits.changed and config.reloaded
 * log lines), a restart-only key is logged as waiting for a restart, a bad edit is logged with
 * its path while the config in force stays, an editor's save by rename is followed, and
 * SIGHUP re-reads a file the watch cannot see (a symlink to another directory).
 */
import { mkdir, rename, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { tempDirs } from '../support/temp-dirs.js';
import { CHILD_PATIENCE, clientOf, servedUrl, spawnServe, type LogLine } from './serve-child.js';
import { eventually } from '../support/eventually.js';

const TIMEOUT = 240_000;
const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const tempDir = tempDirs();

function configText(workspaceRoot: string, maxRunsGlobal: number | string, extra = ''): string {
  return `[execution]\nmax_runs_global = ${maxRunsGlobal}\n[sandbox]\nworkspace_root = ${JSON.stringify(workspaceRoot)}\n${extra}`;
}

async function serveWith(config: string, dataDir: string) {
  const server = spawnServe(
    process.execPath,
    [
      '--import',
      'tsx',
      'src/cli.ts',
      'serve',
      '--port',
      '0',
      '--data-dir',
      dataDir,
      '--config',
      config,
      '--grace-seconds',
      '0',
    ],
    {
      cwd: repoRoot,
      env: { ...process.env, SWITCHYARD_TOKEN: '' },
    },
  );
  const url = await servedUrl(server);
  const client = await clientOf(url, join(dataDir, 'token'));
  const maxRuns = async () => (await client.snapshot()).global.max;
  return { server, client, maxRuns };
}

const message = (text: string) => (line: LogLine) => line.msg.includes(text);

describe('switchyard serve follows its --config file', { timeout: TIMEOUT }, () => {
  it('applies a live key, reports a restart-only key, keeps the config through a bad edit, follows a save by rename', async () => {
    const dir = await tempDir();
    const workspaces = await tempDir();
    const config = join(dir, 'switchyard.toml');
    await writeFile(config, configText(workspaces, 4));
    const { server, maxRuns } = await serveWith(config, join(dir, 'data'));
    await server.waitForLog(message(`following ${config}`), 'the follow line');
    expect(await maxRuns()).toBe(4);

    // A live key, edited in place.
    await writeFile(config, configText(workspaces, 9));
    await eventually(async () => (await maxRuns()) === 9, 'max_runs_global 9 in force', CHILD_PATIENCE);
    expect(await server.waitForLog(message('limits changed'), 'limits.changed')).toMatchObject({ maxRunsGlobal: 9 });
    expect(await server.waitForLog(message('config reloaded'), 'config.reloaded')).toMatchObject({
      applied: ['execution.max_runs_global'],
    });
    expect(await server.waitForLog(message(`config file ${config}: applied`), 'the applied line')).toMatchObject({
      file: config,
      applied: ['execution.max_runs_global'],
    });

    // A restart-only key: logged as waiting, nothing else changes.
    await writeFile(config, configText(workspaces, 9, '[gateway]\nmax_payload_bytes = 65536\n'));
    const waiting = await server.waitForLog(message('waiting for a restart'), 'the restart-only key');
    expect(waiting).toMatchObject({ level: 'warn', file: config, restartRequired: ['gateway.max_payload_bytes'] });
    expect(await maxRuns()).toBe(9);

    // A bad edit: logged with the file and the key; the config in force stays.
    await writeFile(config, configText(workspaces, 0, '[gateway]\nmax_payload_bytes = 65536\n'));
    const bad = await server.waitForLog(message('config file not applied'), 'the bad edit');
    expect(bad).toMatchObject({ level: 'error', file: config, code: 'invalid_config' });
    expect(bad.msg).toContain(config);
    expect(bad.msg).toContain('execution.max_runs_global');
    expect(await maxRuns()).toBe(9);

    // An editor's save: a new file renamed over the old one (a new inode).
    const temp = join(dir, '.switchyard.toml.swp');
    await writeFile(temp, configText(workspaces, 6, '[gateway]\nmax_payload_bytes = 65536\n'));
    await rename(temp, config);
    await eventually(async () => (await maxRuns()) === 6, 'max_runs_global 6 after a save by rename', CHILD_PATIENCE);

    server.child.kill('SIGTERM');
    expect((await server.exited).code).toBe(0);
  });

  it('SIGHUP re-reads the file, also where the watch cannot see the change', async () => {
    const dir = await tempDir();
    const workspaces = await tempDir();
    // The config is a symlink into another directory (a Kubernetes ConfigMap is mounted this
    // way): the watch follows the link's directory, so only SIGHUP sees an edit of the target.
    await mkdir(join(dir, 'real'));
    await mkdir(join(dir, 'etc'));
    const target = join(dir, 'real', 'switchyard.toml');
    const config = join(dir, 'etc', 'switchyard.toml');
    await writeFile(target, configText(workspaces, 4));
    await symlink(target, config);
    const { server, client, maxRuns } = await serveWith(config, join(dir, 'data'));
    await server.waitForLog(message(`following ${config}`), 'the follow line');

    await writeFile(target, configText(workspaces, 7));
    server.child.kill('SIGHUP');
    await server.waitForLog(message(`SIGHUP: re-reading ${config}`), 'the SIGHUP line');
    await eventually(async () => (await maxRuns()) === 7, 'max_runs_global 7 after SIGHUP', CHILD_PATIENCE);

    // Still serving after the hangup.
    const { runId } = await client.submit({ sessionId: 'after-hup', input: 'hello' });
    expect(await client.wait(runId)).toMatchObject({ state: 'completed' });
    server.child.kill('SIGTERM');
    expect((await server.exited).code).toBe(0);
  });
});
