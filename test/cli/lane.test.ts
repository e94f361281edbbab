/*
 * `switchyard lane`: the listing as printed, and the arguments it refuses before connecting.
 */
import { describe, expect, it } from 'vitest';
import { formatLane, laneCommand } from '../../src/cli/lane.js';
import { UsageError } from '../../src/cli/cli-args.js';

const io = { out: () => {}, err: () => {}, color: false };

describe('switchyard lane', () => {
  it('prints the active run and each waiting message with its position, policy, age and first words', () => {
    const lines = formatLane({
      sessionId: 's',
      activeRunId: 'r',
      entries: [
        {
          runId: 'a',
          position: 1,
          busyPolicy: 'queue',
          agentId: 'main',
          createdAt: new Date(0).toISOString(),
          ageMs: 12_400,
          viaInterrupt: false,
          viaRollback: false,
          collects: false,
          preview: 'please also check',
        },
      ],
    });
    expect(lines).toEqual(['session s: running r', '   1. a  queue  12 s  please also check']);
    expect(formatLane({ sessionId: 'idle', entries: [] })).toEqual(['session idle: idle', '  nothing waiting']);
  });

  it.each([[[]], [['list']], [['move', 'a']], [['edit', 'a']], [['shuffle', 'a']], [['withdraw', 'a', 'b']]])(
    'refuses %j before connecting',
    async (argv) => {
      await expect(laneCommand(argv, io)).rejects.toBeInstanceOf(UsageError);
    },
  );
});
