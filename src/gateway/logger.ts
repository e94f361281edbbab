/*
 * Where the gateway's log lines go. Its own file, because every part of the gateway (HTTP
 * routes, upgrades, client and node connections) writes to it.
 */

export interface GatewayLogger {
  info(message: string): void;
  warn(message: string, error?: unknown): void;
  error(message: string, error?: unknown): void;
}

/** The default: info is silent, warnings and errors go to the console. */
export const consoleLogger: GatewayLogger = {
  info: () => {},
  warn: (message, error) => console.warn(`[switchyard gateway] ${message}`, ...(error !== undefined ? [error] : [])),
  error: (message, error) => console.error(`[switchyard gateway] ${message}`, ...(error !== undefined ? [error] : [])),
};
