/**
 * The server's own gauges beside the HTTP ones: configuration problems standing now, when each
 * configuration object was last applied, and which build runs (`svc_build_info`, as Argo CD's
 * `argocd_info`); prom-client's default metrics keep `nodejs_version_info` for the runtime.
 *
 * Each gauge names how workers' values combine when the primary aggregates them (cluster
 * metrics): the most problems any worker sees, the oldest apply any worker holds.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import { createObjectApplies } from '../config/object-applies.js';
import { svcVersion } from '../lib/version.js';
import type { Services } from './services.js';

export function registerServerMetrics(registry: Registry, services: Pick<Services, 'settings' | 'store' | 'now' | 'audit'>): void {
  const { settings, store } = services;
  new Gauge({
    name: 'svc_config_problems',
    help: 'Configuration problems standing now: refused files and objects (YAML that does not parse, a file that cannot be read) and refused keys, each logged once when it appears',
    registers: [registry],
    aggregator: 'max',
    collect() {
      this.set((store.problems?.().length ?? 0) + settings.problems().length);
    },
  });
  const applies = createObjectApplies();
  applies.record(store.current(), services.now());
  // Every store change reaches the settings, which tell their listeners after parsing it.
  settings.onChange(() => applies.record(store.current(), services.now()));
  new Gauge({
    name: 'svc_config_last_applied_timestamp_seconds',
    help: 'When each ConfigMap and Secret was last applied (at start, then when its content in force changes; a refused file leaves it as it was), seconds since the epoch',
    labelNames: ['kind', 'object'],
    registers: [registry],
    aggregator: 'min',
    collect() {
      this.reset();
      for (const { kind, name, at } of applies.current()) this.labels(kind, name).set(at / 1000);
    },
  });
  const { audit } = services;
  new Counter({
    name: 'svc_audit_events_dropped_total',
    help: 'Audit events dropped because the audit sink could not keep up (a stalled reader or disk); the log warns once a minute while it lasts',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(audit.dropped?.() ?? 0);
    },
  });
  new Gauge({ name: 'svc_build_info', help: 'The svc version and the Node.js runtime it runs on', labelNames: ['version', 'node'], registers: [registry], aggregator: 'first' })
    .labels(svcVersion(), process.version)
    .set(1);
}
