/*
 * The `switchyard` command. Subcommands grow with the engine: `demo` runs a scripted
 * scenario in-process and prints its timeline.
 */
import { runDemo } from './cli/demo.js';

const USAGE = `usage: switchyard <command>

commands:
  demo     run a scripted scenario in-process (two sessions, a queued message, a steer,
           an interrupt, a deadline) and print its events as a timeline
  help     show this text
`;

async function main(argv: string[]): Promise<number> {
  const [command = 'help'] = argv;
  switch (command) {
    case 'demo':
      await runDemo();
      return 0;
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(USAGE);
      return 0;
    default:
      process.stderr.write(`switchyard: unknown command "${command}"\n\n${USAGE}`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  },
);
