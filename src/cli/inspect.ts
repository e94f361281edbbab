/*
 * `switchyard inspect --export DIR`: writes one SVG per statechart (limiter, session, run,
 * act, tool-call), drawn from machines/ — the pictures the README embeds.
 */
import { exportStatecharts } from '../diagrams/export.js';
import { parseCommandArgs, UsageError, type CliIo } from './cli-args.js';

export const INSPECT_USAGE = `usage: switchyard inspect --export DIR

  Writes one SVG per statechart (limiter, session, run, act, tool-call) into DIR.
  The live inspector is served by "switchyard serve" at http://HOST:PORT/inspect?token=…
`;

export async function inspectCommand(argv: string[], io: CliIo): Promise<number> {
  const { values } = parseCommandArgs(argv, { export: { type: 'string' }, help: { type: 'boolean', short: 'h' } });
  if (values.help) {
    io.out(INSPECT_USAGE);
    return 0;
  }
  if (!values.export) throw new UsageError('inspect needs --export DIR');
  for (const path of await exportStatecharts(values.export)) io.out(`wrote ${path}`);
  return 0;
}
