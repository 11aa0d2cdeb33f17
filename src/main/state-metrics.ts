/**
 * The state backend's connection in /metrics: `svc_state_backend_connected` (1 while the main
 * connection is ready; memory: always 1) and `svc_state_backend_revived_total` (clients svc
 * connected again after the Redis library had given up on them, docs/state.md). Read from the
 * backend at each scrape, without a round trip to Redis: a scrape never waits for Redis.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { StateBackend } from '../state/state.js';

export function registerStateMetrics(registry: Registry, state: Pick<StateBackend, 'connection'>): void {
  new Gauge({
    name: 'svc_state_backend_connected',
    help: '1 while the connection to the state backend is ready for commands, 0 while it is lost or being re-established (with several workers: 0 when any worker\'s is)',
    registers: [registry],
    // Combined over the workers (cluster-metrics.ts): one cut-off worker must show, not be summed away.
    aggregator: 'min',
    collect() {
      this.set(state.connection().connected ? 1 : 0);
    },
  });
  new Counter({
    name: 'svc_state_backend_revived_total',
    help: 'Redis clients that the Redis library had given up on (ended) and that svc connected again',
    registers: [registry],
    collect() {
      // The backend keeps the count; a counter only goes up, so this mirrors it.
      this.reset();
      this.inc(state.connection().revived);
    },
  });
}
