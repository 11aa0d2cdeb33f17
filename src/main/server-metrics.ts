/**
 * The server's own gauges beside the HTTP ones: configuration problems standing now, when a
 * configuration was last applied, and which build runs (`svc_build_info`, as Argo CD's
 * `argocd_info`); prom-client's default metrics keep `nodejs_version_info` for the runtime.
 */
import { Gauge, type Registry } from 'prom-client';
import { svcVersion } from '../lib/version.js';
import type { Services } from './services.js';

export function registerServerMetrics(registry: Registry, services: Pick<Services, 'settings' | 'now'>): void {
  const problems = services.settings.problems;
  new Gauge({
    name: 'svc_config_problems',
    help: 'Configuration problems standing now (each logged once, with its key path, when it appears)',
    registers: [registry],
    collect() {
      this.set(problems().length);
    },
  });
  const lastApplied = new Gauge({
    name: 'svc_config_last_applied_timestamp_seconds',
    help: 'When the configuration was last applied (at start, then on every change of the store), seconds since the epoch',
    registers: [registry],
  });
  lastApplied.set(services.now() / 1000);
  services.settings.onChange(() => lastApplied.set(services.now() / 1000));
  new Gauge({ name: 'svc_build_info', help: 'The svc version and the Node.js runtime it runs on', labelNames: ['version', 'node'], registers: [registry] })
    .labels(svcVersion(), process.version)
    .set(1);
}
