/*
 * The gateway's figures at scrape time, from gateway.stats(): open connections, their
 * subscriptions and unread bytes, and the slow consumers it dropped (a counter the gateway
 * keeps; Prometheus sees it grow by the difference since the last scrape).
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { GatewayStats } from '../gateway/index.js';

export function registerGatewayGauges(registry: Registry, stats: () => GatewayStats): void {
  const registers = [registry];
  new Gauge({
    name: 'switchyard_gateway_connections',
    help: 'Open client connections of the gateway.',
    registers,
    collect() {
      this.set(stats().connections);
    },
  });
  new Gauge({
    name: 'switchyard_gateway_subscriptions',
    help: 'Event and inspect subscriptions over all connections.',
    registers,
    collect() {
      this.set(stats().subscriptions);
    },
  });
  new Gauge({
    name: 'switchyard_gateway_pending_bytes',
    help: 'Bytes sent to clients that they have not read yet, over all connections.',
    registers,
    collect() {
      this.set(stats().pendingBytes);
    },
  });
  let counted = 0;
  new Counter({
    name: 'switchyard_gateway_slow_consumers_dropped_total',
    help: 'Connections closed with 4008 because their client did not read fast enough.',
    registers,
    collect() {
      const dropped = stats().slowConsumersDropped;
      if (dropped > counted) this.inc(dropped - counted);
      counted = dropped;
    },
  });
}
