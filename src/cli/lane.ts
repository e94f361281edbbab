/*
 * `switchyard lane`: a session's wait lane on a running server (docs/runs.md, "A queue you can
 * see and change") — list it, withdraw, move, promote or edit a waiting message.
 */
import { connect } from '../client/client.js';
import type { LaneListing } from '../core/lane.js';
import { parseCommandArgs, UsageError, type CliIo } from './cli-args.js';
import { DEFAULT_GATEWAY_URL, gatewayTarget } from './gateway-target.js';

export const LANE_USAGE = `usage: switchyard lane <list SESSION | withdraw RUN | move RUN POSITION | promote RUN | edit RUN TEXT>
       [--gateway ws://127.0.0.1:7420] [--token-file FILE | --data-dir DIR] [--json]

  list      the session's active run and waiting messages, front first
  withdraw  take a waiting message out of the lane (it ends cancelled/withdrawn)
  move      move a waiting message to a 1-based position
  promote   make a waiting message a steer of the active run
  edit      replace a waiting message's text
  A message that no longer waits answers not_waiting, naming its state.
`;

const OPTIONS = {
  gateway: { type: 'string' },
  token: { type: 'string' },
  'token-file': { type: 'string' },
  'data-dir': { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

export async function laneCommand(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandArgs(argv, OPTIONS, true);
  if (values.help) {
    io.out(LANE_USAGE);
    return 0;
  }
  const [op, id, extra] = positionals;
  const arity: Record<string, number> = { list: 2, withdraw: 2, move: 3, promote: 2, edit: 3 };
  if (op === undefined || arity[op] === undefined || positionals.length !== arity[op] || id === undefined)
    throw new UsageError(`expected one of: list SESSION, withdraw RUN, move RUN POSITION, promote RUN, edit RUN TEXT`);
  const { url, token } = await gatewayTarget(values, values.gateway ?? DEFAULT_GATEWAY_URL, io.err);
  const client = await connect(url, { token });
  try {
    if (op === 'list') {
      const listing = await client.lane(id);
      if (values.json) io.out(JSON.stringify(listing, null, 2));
      else for (const line of formatLane(listing)) io.out(line);
      return 0;
    }
    const result =
      op === 'withdraw'
        ? await client.withdraw(id)
        : op === 'move'
          ? await client.moveInLane(id, Number(extra))
          : op === 'promote'
            ? await client.promoteToSteer(id)
            : await client.editWaiting(id, extra!);
    if (values.json) io.out(JSON.stringify(result, null, 2));
    else io.out(`${result.runId} ${result.change}; lane now: ${result.lane.join(', ') || 'empty'}`);
    return 0;
  } finally {
    await client.close();
  }
}

export function formatLane(listing: LaneListing): string[] {
  const lines = [
    `session ${listing.sessionId}: ${listing.activeRunId !== undefined ? `running ${listing.activeRunId}` : 'idle'}`,
  ];
  if (listing.entries.length === 0) lines.push('  nothing waiting');
  for (const e of listing.entries)
    lines.push(
      `  ${String(e.position).padStart(2)}. ${e.runId}  ${e.busyPolicy}  ${Math.round(e.ageMs / 1000)} s  ${e.preview}`,
    );
  return lines;
}
