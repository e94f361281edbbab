/*
 * The signals `switchyard serve` answers, installed before anything starts:
 * - SIGINT, SIGTERM: stop gracefully (the first one; a repeat changes nothing, because one
 *   Ctrl-C or one `systemctl stop` often arrives twice: to the whole process group, and again
 *   relayed by `npm start`);
 * - SIGQUIT (Ctrl-\): exit at once, without waiting for runs;
 * - SIGHUP: re-read the config file.
 */
export interface ServeSignalHandlers {
  /** SIGHUP (must not throw). */
  onHangup(): void;
  /** A stop signal after the first (must not throw). */
  onRepeat(signal: string): void;
  /** SIGQUIT: the process is about to exit (must not throw). */
  onQuit(): void;
}

export interface ServeSignals {
  /** The first SIGINT or SIGTERM. */
  stop: Promise<string>;
  /** Removes every handler. */
  close(): void;
}

export function listenForServeSignals(signals: NodeJS.EventEmitter, handlers: ServeSignalHandlers): ServeSignals {
  let stopping = false;
  let resolveStop!: (signal: string) => void;
  const stop = new Promise<string>((resolve) => (resolveStop = resolve));
  const onStop = (signal: string) => {
    if (stopping) return handlers.onRepeat(signal);
    stopping = true;
    resolveStop(signal);
  };
  const onHangup = () => handlers.onHangup();
  const onQuit = () => {
    handlers.onQuit();
    process.exit(1);
  };
  signals.on('SIGINT', onStop);
  signals.on('SIGTERM', onStop);
  signals.on('SIGHUP', onHangup);
  signals.on('SIGQUIT', onQuit);
  return {
    stop,
    close: () => {
      signals.off('SIGINT', onStop);
      signals.off('SIGTERM', onStop);
      signals.off('SIGHUP', onHangup);
      signals.off('SIGQUIT', onQuit);
    },
  };
}
