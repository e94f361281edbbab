/*
 * `switchyard status`: the engine snapshot of a running server (limits in use, who waits,
 * what runs, each busy session's lane), as a short table; --json prints it raw.
 */
import { connect } from '../client/client.js';
import type { EngineSnapshot } from '../core/engine-snapshot.js';
import { parseCommandArgs, type CliIo } from './cli-args.js';
import { DEFAULT_GATEWAY_URL, gatewayTarget } from './gateway-target.js';

export const STATUS_USAGE = `usage: switchyard status [--gateway ws://127.0.0.1:7420] [--token-file FILE | --data-dir DIR] [--json]

  Asks a running server (default ${DEFAULT_GATEWAY_URL}) for its engine snapshot. The token
  comes from --token-file, $SWITCHYARD_TOKEN or <--data-dir, default .switchyard>/token
  (--token=T works too, with a warning: every user of the machine can read a command line).
`;

const OPTIONS = {
  gateway: { type: 'string' },
  token: { type: 'string' },
  'token-file': { type: 'string' },
  'data-dir': { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

export async function statusCommand(argv: string[], io: CliIo): Promise<number> {
  const { values } = parseCommandArgs(argv, OPTIONS);
  if (values.help) {
    io.out(STATUS_USAGE);
    return 0;
  }
  const { url, token } = await gatewayTarget(values, values.gateway ?? DEFAULT_GATEWAY_URL, io.err);
  const client = await connect(url, { token });
  try {
    const snapshot = await client.snapshot();
    if (values.json) io.out(JSON.stringify(snapshot, null, 2));
    else for (const line of formatSnapshot(snapshot, url)) io.out(line);
    return 0;
  } finally {
    await client.close();
  }
}

export function formatSnapshot(snapshot: EngineSnapshot, source: string): string[] {
  const lines = [
    `engine at ${source}`,
    `  runs       ${snapshot.global.inUse}/${snapshot.global.max} permits in use, ${snapshot.waiting} waiting for one`,
  ];
  const agents = Object.entries(snapshot.perAgent);
  if (agents.length > 0) {
    lines.push('  agents');
    for (const [agentId, { inUse, max }] of agents) lines.push(`    ${agentId.padEnd(20)} ${inUse}/${max}`);
  }
  lines.push(`  running    ${snapshot.running.length === 0 ? 'none' : ''}`.trimEnd());
  for (const runId of snapshot.running) lines.push(`    ${runId}`);
  lines.push(`  sessions   ${snapshot.sessions.length === 0 ? 'none busy' : ''}`.trimEnd());
  for (const session of snapshot.sessions) {
    const active = session.activeRunId !== undefined ? `running ${session.activeRunId}` : 'idle';
    lines.push(`    ${session.sessionId.padEnd(20)} ${active}, ${session.laneDepth} queued`);
  }
  return lines;
}
