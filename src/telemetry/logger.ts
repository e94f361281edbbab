/*
 * The structured log: pino, one JSON object per line, with every message and field passed
 * through the approval redaction (src/approval/redact.ts) so no token or API key reaches a log
 * file. On a terminal the same lines are shown human-readable by pino-pretty, in-process;
 * pino-pretty is loaded only then.
 */
import { pino, stdSerializers, type Level, type Logger } from 'pino';
import { redactText, redactValue } from '../approval/redact.js';

export type { Logger };

export const LOG_LEVEL_ENV = 'SWITCHYARD_LOG_LEVEL';
const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LEVELS)[number];

export interface LoggerOptions {
  /** `[telemetry] log_level`; SWITCHYARD_LOG_LEVEL in `env` overrides it. */
  level: LogLevel;
  env?: NodeJS.ProcessEnv;
  /** Where the lines go (one call per line, without its newline). Default: stdout. */
  write?: (line: string) => void;
  /** Human-readable lines (for a terminal) instead of JSON. */
  pretty?: boolean;
}

/** The level in force: the environment's when it names one, else the configured one. */
export function logLevelOf(configured: LogLevel, env: NodeJS.ProcessEnv = process.env): LogLevel {
  const fromEnv = env[LOG_LEVEL_ENV]?.trim().toLowerCase();
  return LEVELS.find((level) => level === fromEnv) ?? configured;
}

export async function createLogger(options: LoggerOptions): Promise<Logger> {
  const write = options.write ?? ((line: string) => void process.stdout.write(`${line}\n`));
  let format = (line: string) => line.replace(/\n$/, '');
  if (options.pretty) {
    const { prettyFactory } = await import('pino-pretty');
    const prettify = prettyFactory({
      colorize: true,
      singleLine: true,
      translateTime: 'SYS:HH:MM:ss.l',
      ignore: 'pid,hostname',
    });
    format = (line) => prettify(line).replace(/\n$/, '');
  }
  return pino(
    {
      level: logLevelOf(options.level, options.env),
      // Errors are serialized (and redacted) by the log formatter below, in any field.
      serializers: { err: (value: unknown) => value },
      formatters: {
        level: (label) => ({ level: label as Level }),
        bindings: (bindings) => redactValue(bindings) as Record<string, unknown>,
        log: (object) => redactValue(withErrorsSerialized(object)) as Record<string, unknown>,
      },
      hooks: {
        // The message is not part of the object the formatters see.
        logMethod(args, method) {
          method.apply(
            this,
            args.map((arg) => (typeof arg === 'string' ? redactText(arg) : arg)) as Parameters<typeof method>,
          );
        },
      },
    },
    { write: (line: string) => write(format(line)) },
  );
}

/** Errors become plain objects (type, message, stack, code) before the redaction copies them. */
function withErrorsSerialized(object: Record<string, unknown>): Record<string, unknown> {
  let copy: Record<string, unknown> | undefined;
  for (const [key, value] of Object.entries(object)) {
    if (value instanceof Error) (copy ??= { ...object })[key] = stdSerializers.err(value);
  }
  return copy ?? object;
}
