/*
 * The `switchyard` command: dispatches to the subcommands in src/cli/, each loaded only when
 * it runs (a short command should not pay for the server's imports). Exit codes: 0 done,
 * 1 failed (a run that did not complete, an unreachable server), 2 bad usage.
 */
import { processIo, UsageError, type CliIo } from './cli/cli-args.js';

const USAGE = `usage: switchyard <command> [options]

commands:
  serve    run the engine behind the WebSocket gateway until SIGINT/SIGTERM
  run      send one message (in-process, or to a gateway) and print its events as a timeline
  status   print the engine snapshot of a running server
  lane     list SESSION | withdraw RUN | move RUN POS | promote RUN | edit RUN TEXT: a session's wait lane
  node     --gateway URL --name NAME: run node_invoke commands for a gateway
  acp      speak the Agent Client Protocol on stdin/stdout, for editors (Zed, JetBrains, …)
  inspect  --export DIR: write an SVG of every statechart
  simulate --seed N --runs M [--json]: a seeded simulation with faults, checking invariants;
           --from-store DIR / --workload FILE --config|--compare …: your deployment in virtual time
  demo     run a scripted scenario in-process (two sessions, a queued message, a steer,
           an interrupt, a deadline) and print its events as a timeline
  help     show this text ("switchyard <command> --help" for a command's options)
`;

interface Command {
  main(argv: string[], io: CliIo): Promise<number>;
  usage: string;
}

const COMMANDS: Record<string, () => Promise<Command>> = {
  serve: async () => {
    const { serveCommand, SERVE_USAGE } = await import('./cli/serve.js');
    return { main: serveCommand, usage: SERVE_USAGE };
  },
  run: async () => {
    const { runCommand, RUN_USAGE } = await import('./cli/run.js');
    return { main: runCommand, usage: RUN_USAGE };
  },
  status: async () => {
    const { statusCommand, STATUS_USAGE } = await import('./cli/status.js');
    return { main: statusCommand, usage: STATUS_USAGE };
  },
  lane: async () => {
    const { laneCommand, LANE_USAGE } = await import('./cli/lane.js');
    return { main: laneCommand, usage: LANE_USAGE };
  },
  node: async () => {
    const { nodeCommand, NODE_USAGE } = await import('./cli/node.js');
    return { main: nodeCommand, usage: NODE_USAGE };
  },
  acp: async () => {
    const { acpCommand, ACP_USAGE } = await import('./cli/acp.js');
    return { main: acpCommand, usage: ACP_USAGE };
  },
  simulate: async () => {
    const { runSimulateCommand, SIMULATE_USAGE } = await import('./sim/cli.js');
    return { main: (argv: string[]) => runSimulateCommand(argv), usage: SIMULATE_USAGE };
  },
  inspect: async () => {
    const { inspectCommand, INSPECT_USAGE } = await import('./cli/inspect.js');
    return { main: inspectCommand, usage: INSPECT_USAGE };
  },
  demo: async () => {
    const { runDemo } = await import('./cli/demo.js');
    const main = async () => {
      await runDemo();
      return 0;
    };
    return { main, usage: USAGE };
  },
};

async function main(argv: string[]): Promise<number> {
  const [name = 'help', ...rest] = argv;
  if (name === 'help' || name === '--help' || name === '-h') {
    process.stdout.write(USAGE);
    return 0;
  }
  const load = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!load) {
    process.stderr.write(`switchyard: unknown command "${name}"\n\n${USAGE}`);
    return 2;
  }
  const command = await load();
  try {
    return await command.main(rest, processIo);
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`switchyard ${name}: ${error.message}\n\n${command.usage}`);
      return 2;
    }
    throw error;
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`switchyard: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  },
);
