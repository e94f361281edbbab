/*
 * `switchyard serve`: an engine on the file store of the data directory (or, with [store] kind
 * = "redis", one process of a cluster: serve-backend.ts) behind the WebSocket gateway, until
 * SIGINT/SIGTERM. Shutdown is graceful: new submits are refused (and /readyz
 * answers 503), running runs get up to --grace-seconds to finish, whatever still runs then is
 * cancelled, and the engine closes (flushing the store; queued messages stay queued for the
 * next start). It follows its --config file while it runs (config-follower.ts; SIGHUP re-reads
 * it too). Everything it says is a structured log line: JSON, or human-readable on a terminal
 * (README, "Operating Switchyard").
 */
import { resolve } from 'node:path';
import { defaultConfig, type Config } from '../config/index.js';
import type { Engine } from '../engine/index.js';
import { startGateway, type HttpRouteHandler } from '../gateway/gateway.js';
import { NodeRegistry } from '../gateway/nodes/node-registry.js';
import { inspectorRoutes } from '../gateway/inspector-page/index.js';
import { createLogger, gatewayLoggerOf, readinessProbe, startTelemetry, type Logger } from '../telemetry/index.js';
import { startStatelyBridge, type StatelyBridge } from '../gateway/inspection/stately-bridge.js';
import { parseCommandArgs, portOption, secondsOption, UsageError, type CliIo } from './cli-args.js';
import { ConfigFollower } from './config-follower.js';
import { startServeBackend } from './serve-backend.js';
import { listenForServeSignals } from './serve-signals.js';

export const SERVE_USAGE = `usage: switchyard serve [--host 127.0.0.1] [--port 7420] [--data-dir .switchyard]
                       [--config switchyard.toml] [--grace-seconds 10]
                       [--stately-inspector ws://HOST:PORT [--stately-session ID | --stately-run ID]]

  --host, --port     where to listen (default: [gateway] of the config; --port 0 picks a free port)
  --data-dir         the store and the token file (default: [store] dir of the config);
                     with [store] kind = "redis", only the token file
  --config           a TOML config file, followed while the server runs: a saved change
                     applies its live keys at once and logs the keys waiting for a restart;
                     a bad edit is logged and the config in force stays; SIGHUP re-reads it
  --grace-seconds    on SIGINT/SIGTERM, how long running runs may take to finish before
                     they are cancelled (default 10); SIGQUIT (Ctrl-\\) exits at once
  --stately-inspector  also send the actors to an inspector server of @statelyai/inspect,
                     for Stately's Inspector (default: [inspector] stately_url of the config)
  --stately-session, --stately-run
                     only that session's or that run's actors (default: every actor)
`;

const OPTIONS = {
  host: { type: 'string' },
  port: { type: 'string' },
  'data-dir': { type: 'string' },
  config: { type: 'string' },
  'grace-seconds': { type: 'string' },
  'stately-inspector': { type: 'string' },
  'stately-session': { type: 'string' },
  'stately-run': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

export async function serveCommand(argv: string[], io: CliIo, signals: NodeJS.EventEmitter = process): Promise<number> {
  const { values } = parseCommandArgs(argv, OPTIONS);
  if (values.help) {
    io.out(SERVE_USAGE);
    return 0;
  }
  const graceMs = (secondsOption(values['grace-seconds'], '--grace-seconds') ?? 10) * 1000;
  // Installed first: a stop or a hangup while the server starts is answered, not fatal.
  let logger: Logger | undefined;
  let follower: ConfigFollower | undefined;
  const serveSignals = listenForServeSignals(signals, {
    onHangup: () => {
      if (!follower) return logger?.info('SIGHUP: no config file (--config) to re-read');
      const file = follower.file;
      logger?.info({ file }, `SIGHUP: re-reading ${file}`);
      follower
        .reload()
        .catch((error: unknown) => logger?.error({ file, err: error }, `SIGHUP: re-reading ${file} failed`));
    },
    onRepeat: (name) => logger?.warn(`${name}: already stopping (SIGQUIT, Ctrl-\\, exits at once)`),
    onQuit: () => logger?.warn('SIGQUIT: exiting at once, without waiting for runs'),
  });
  try {
    return await serveUntilStopped(values, io, graceMs, serveSignals.stop, {
      setLogger: (created) => (logger = created),
      setFollower: (created) => (follower = created),
    });
  } finally {
    follower?.close();
    serveSignals.close();
  }
}

interface ServeParts {
  setLogger(logger: Logger): void;
  setFollower(follower: ConfigFollower): void;
}

async function serveUntilStopped(
  values: ReturnType<typeof parseCommandArgs<typeof OPTIONS>>['values'],
  io: CliIo,
  graceMs: number,
  stop: Promise<string>,
  parts: ServeParts,
): Promise<number> {
  const follower = values.config !== undefined ? await ConfigFollower.start(values.config) : undefined;
  if (follower) parts.setFollower(follower);
  const config: Config = follower ? follower.current() : defaultConfig();
  const stately = statelyOptions(config, values);
  const logger = await createLogger({ level: config.telemetry.log_level, write: io.out, pretty: io.color });
  parts.setLogger(logger);
  const dataDir = resolve(values['data-dir'] ?? config.store.dir);
  const telemetry = await startTelemetry({ telemetry: config.telemetry, models: config.models, logger });
  // Created first: the engine's node_invoke and the gateway's node connections share it.
  const nodes = new NodeRegistry();
  const backend = await startServeBackend(config, dataDir, {
    nodes,
    observer: telemetry.observer,
    instrumentStore: (store) => telemetry.instrumentStore(store),
    onError: (error) => logger.error({ err: error }, 'engine error'),
    log: (line) => logger.info(line),
    warn: (line) => logger.warn(line),
  }).catch(async (error: unknown) => {
    await telemetry.close();
    throw error;
  });
  const { engine, store } = backend;
  await telemetry.attach(engine, { store });
  const metrics: Record<string, HttpRouteHandler> = telemetry.metricsRoute
    ? { '/metrics': telemetry.metricsRoute }
    : {};
  const gateway = await startGateway({
    engine: backend.front,
    nodes,
    host: values.host ?? config.gateway.host,
    port: portOption(values.port) ?? config.gateway.port,
    dataDir,
    maxPayloadBytes: config.gateway.max_payload_bytes,
    httpRoutes: { ...inspectorRoutes(), ...(config.gateway.metrics_public ? {} : metrics) },
    publicHttpRoutes: config.gateway.metrics_public ? metrics : {},
    readiness: readinessProbe({
      store,
      config: () => engine.currentConfig(),
      notReady: (reason) => logger.warn({ reason }, 'not ready'),
    }),
    logger: gatewayLoggerOf(logger),
  }).catch(async (error: unknown) => {
    await backend.close();
    await telemetry.close();
    throw error;
  });
  telemetry.attachGateway(() => gateway.stats());
  await backend.announce(gateway.url);

  logger.info(
    { store: store.kind === 'memory' ? 'memory' : store.kind === 'redis' ? 'redis' : dataDir },
    `store: ${backend.describe}`,
  );
  logger.info({ url: gateway.url }, `listening on ${gateway.url}`);
  logger.info(
    { url: `${gateway.httpUrl}/inspect` },
    `inspector: ${gateway.httpUrl}/inspect, with the gateway token as ?token`,
  );
  const statelyBridge = stately ? await startStately(backend.front, stately, logger) : undefined;
  if (telemetry.metricsRoute)
    logger.info(
      { url: `${gateway.httpUrl}/metrics`, public: config.gateway.metrics_public },
      `metrics: ${gateway.httpUrl}/metrics`,
    );
  // The token itself is shown only to a person at a terminal, never written to a log.
  if (gateway.tokenCreated && io.color)
    io.out(`token (generated now; shown this once, kept in ${gateway.tokenPath}): ${gateway.token}`);
  logger.info(
    { file: gateway.tokenPath },
    `${gateway.tokenCreated ? 'generated the gateway token; it is' : 'the gateway token is'} in ${gateway.tokenPath}`,
  );
  if (follower) {
    // The engine keeps its data directory (the store's dir as placed by the backend) across reloads.
    const apply = async (next: Config) =>
      backend.front.reconfigure({ ...next, store: { ...next.store, dir: engine.currentConfig().store.dir } });
    follower.attach(config, apply, logger);
    logger.info(
      { file: follower.file },
      `following ${follower.file} (live keys apply when it is saved; SIGHUP re-reads it)`,
    );
  }

  const signal = await stop;

  logger.info(
    `${signal}: shutting down; nothing new starts (waiting messages stay queued for the next start), running runs get ${graceMs / 1000} s to finish`,
  );
  gateway.stopAdmitting();
  engine.stopAdmitting();
  const unfinished = await finishRunning(engine, graceMs);
  if (unfinished > 0) logger.info(`cancelling ${unfinished} run(s) still running`);
  // The engine first: it cancels what still runs (queued messages stay queued in the store)
  // and answers the clients waiting for those runs before their connections close.
  await backend.close();
  statelyBridge?.stop();
  await gateway.close();
  await telemetry.close();
  logger.info('stopped');
  return 0;
}

interface StatelyTarget {
  url: string;
  sessionId?: string;
  runId?: string;
  maxBuffered: number;
}

/** Where the Stately bridge sends, and what: the flags over [inspector] of the config; undefined if nowhere. */
function statelyOptions(
  config: Config,
  values: { 'stately-inspector'?: string; 'stately-session'?: string; 'stately-run'?: string },
): StatelyTarget | undefined {
  const url = values['stately-inspector'] ?? config.inspector.stately_url;
  const sessionId =
    values['stately-session'] ?? (values['stately-run'] === undefined ? config.inspector.stately_session : undefined);
  const runId =
    values['stately-run'] ?? (values['stately-session'] === undefined ? config.inspector.stately_run : undefined);
  if (url === undefined) {
    if (values['stately-session'] !== undefined || values['stately-run'] !== undefined)
      throw new UsageError('--stately-session and --stately-run need --stately-inspector (or [inspector] stately_url)');
    return undefined;
  }
  if (!/^wss?:\/\/[^/]/.test(url))
    throw new UsageError(
      `--stately-inspector must be a ws:// or wss:// address of an inspector server, e.g. ws://127.0.0.1:8080, not "${url}"`,
    );
  if (sessionId !== undefined && runId !== undefined)
    throw new UsageError('give --stately-session or --stately-run, not both');
  return {
    url,
    maxBuffered: config.inspector.stately_buffer,
    ...(sessionId !== undefined ? { sessionId } : {}),
    ...(runId !== undefined ? { runId } : {}),
  };
}

/** The Stately bridge, or a logged reason why not: the gateway serves either way. */
async function startStately(
  engine: Parameters<typeof startStatelyBridge>[0],
  target: StatelyTarget,
  logger: Logger,
): Promise<StatelyBridge | undefined> {
  try {
    const bridge = await startStatelyBridge(engine, { ...target, log: (level, line) => logger[level](line) });
    const what =
      target.sessionId !== undefined
        ? `session ${target.sessionId}`
        : target.runId !== undefined
          ? `run ${target.runId}`
          : 'every actor';
    logger.info({ url: target.url }, `Stately inspector: sending ${what} to ${target.url}`);
    return bridge;
  } catch (error) {
    logger.error({ err: error }, String((error as Error).message ?? error));
    return undefined;
  }
}

/** Waits until nothing runs or the grace period is over; returns how many runs still run. */
async function finishRunning(engine: Engine, graceMs: number): Promise<number> {
  const deadline = Date.now() + graceMs;
  for (;;) {
    const running = engine.snapshot().running;
    const left = deadline - Date.now();
    if (running.length === 0 || left <= 0) return running.length;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(running.map((runId) => engine.wait(runId).catch(() => undefined))),
      new Promise<void>((done) => (timer = setTimeout(done, left))),
    ]);
    clearTimeout(timer);
  }
}
