/*
 * Argument parsing for the subcommands: node:util parseArgs, with its errors turned into
 * UsageError (exit code 2, the message and the command's usage printed).
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';

export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** How a subcommand talks to the terminal (tests pass their own). */
export interface CliIo {
  out(line: string): void;
  err(line: string): void;
  /** Colour the timeline (a TTY by default). */
  color: boolean;
}

export const processIo: CliIo = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
  color: process.stdout.isTTY === true,
};

type Options = NonNullable<ParseArgsConfig['options']>;
// Spelled out for the declaration build: the inferred type names a type node:util does not export.
type ParsedCommandArgs<O extends Options> = ReturnType<
  typeof parseArgs<{ args: string[]; options: O; allowPositionals: boolean; strict: true }>
>;

export function parseCommandArgs<O extends Options>(
  args: string[],
  options: O,
  allowPositionals = false,
): ParsedCommandArgs<O> {
  try {
    return parseArgs({ args, options, allowPositionals, strict: true });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

export function portOption(value: string | undefined, flag = '--port'): number | undefined {
  if (value === undefined) return undefined;
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new UsageError(`${flag} must be a port number 0-65535 (0 picks a free one), not "${value}"`);
  return port;
}

export function secondsOption(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const seconds = Number(value);
  if (!Number.isFinite(seconds) || seconds < 0)
    throw new UsageError(`${flag} must be a number of seconds >= 0, not "${value}"`);
  return seconds;
}
