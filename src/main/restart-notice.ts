/**
 * The keys a running replica reads only at start (issue 52, finding 5): `url` when the bundled
 * identity provider serves (it is the provider's issuer), the SSO provider in force and
 * `oidc.config` (sso.ts logs those). A change of one is not a bad value but a rollout: the
 * replicas that start use the new value, the running ones keep theirs until restarted.
 * `svc_config_restart_pending` is 1 while this replica runs with a value its store no longer
 * holds, so the alert catches a rollout left half done (docs/operations.md).
 */
import { Gauge, type Registry } from 'prom-client';
import type { LiveSettings } from '../config/live-settings.js';
import { ssoInForce } from '../oidc/in-force.js';
import type { Feature } from './feature.js';
import type { Settings } from './settings.js';

/** The keys of `now` that differ from the ones read at start; `url` only when `urlAtStart` (the bundled provider). */
export function keysPendingRestart(atStart: Settings, now: Settings, urlAtStart: boolean): readonly string[] {
  const keys: string[] = [];
  if (urlAtStart && now.url !== atStart.url) keys.push('url');
  // Compared whole, secrets included, never logged.
  if (ssoInForce(now) !== ssoInForce(atStart) || JSON.stringify(now.oidc) !== JSON.stringify(atStart.oidc)) keys.push('oidc.config');
  return keys;
}

export interface RestartNoticeDeps {
  readonly settings: Pick<LiveSettings<Settings>, 'current' | 'onChange'>;
  readonly log: { warn(fields: object, msg: string): void };
  readonly registry: Registry;
}

export function restartNotice({ settings, log, registry }: RestartNoticeDeps, urlAtStart: boolean): Feature {
  const atStart = settings.current();
  let pending: readonly string[] = [];
  new Gauge({
    name: 'svc_config_restart_pending',
    help: 'Whether a key this replica reads only at start (url with the bundled identity provider, the SSO provider, oidc.config) changed since it started (1): finish the rollout',
    registers: [registry],
    aggregator: 'max',
    collect() {
      this.set(pending.length > 0 ? 1 : 0);
    },
  });
  const unsubscribe = settings.onChange((now) => {
    const keys = keysPendingRestart(atStart, now, urlAtStart);
    if (keys.includes('url') && !pending.includes('url')) {
      log.warn({ inForce: atStart.url, configured: now.url }, 'url changed: svc reads it at start (it is the bundled identity provider\'s issuer); restart svc to apply the change (a rollout: until then this replica keeps the url from its start)');
    }
    pending = keys;
  });
  return { name: 'restart-notice', close: () => Promise.resolve(unsubscribe()).then(() => undefined) };
}
