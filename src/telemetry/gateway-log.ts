/* The gateway's log lines (connections, refused upgrades, failed routes) as structured lines. */
import type { GatewayLogger } from '../gateway/index.js';
import type { Logger } from './logger.js';

export function gatewayLoggerOf(logger: Logger): GatewayLogger {
  const log = logger.child({ component: 'gateway' });
  return {
    info: (message) => log.debug(message),
    warn: (message, error) => (error === undefined ? log.warn(message) : log.warn({ err: error }, message)),
    error: (message, error) => (error === undefined ? log.error(message) : log.error({ err: error }, message)),
  };
}
