/** Keys read only at start: a change is said (log, svc_config_restart_pending), as a rollout to finish, not a bad value. */
import { expect } from 'chai';
import { Registry } from 'prom-client';
import type { ConfigMapObject, SecretObject, StoreSnapshot } from '../../src/config/manifests.js';
import { restartNotice } from '../../src/main/restart-notice.js';
import { parseSettings, type Settings } from '../../src/main/settings.js';

function settingsWith(cm: Record<string, string>): Settings {
  const snapshot: StoreSnapshot = {
    configMaps: new Map<string, ConfigMapObject>([['svc-cm', { name: 'svc-cm', file: 'cm.yaml', data: cm }]]),
    secrets: new Map<string, SecretObject>([['svc-secret', { name: 'svc-secret', file: 's.yaml', labels: {}, data: { 'server.secretkey': 'k' } }]]),
    applications: [],
  };
  return parseSettings(snapshot).settings;
}

/** A running replica's settings, started on `url`, and what it logs and exports. */
function replica(urlAtStart: boolean) {
  let current = settingsWith({ url: 'https://svc.example' });
  const listeners = new Set<(now: Settings, previous: Settings) => void>();
  const warnings: string[] = [];
  const registry = new Registry();
  restartNotice({
    settings: { current: () => current, onChange: (l) => (listeners.add(l), () => listeners.delete(l)) },
    log: { warn: (_fields, msg) => warnings.push(msg) },
    registry,
  }, urlAtStart);
  return {
    edit(cm: Record<string, string>) {
      const previous = current;
      current = settingsWith(cm);
      for (const l of listeners) l(current, previous);
    },
    warnings,
    pending: async () => /^svc_config_restart_pending (\d)$/m.exec(await registry.metrics())?.[1],
  };
}

describe('restart notice', () => {
  it('with the bundled provider, a url change is said once and pending until the url of the start is back', async () => {
    const r = replica(true);
    expect(await r.pending()).to.equal('0');
    r.edit({ url: 'https://svc2.example' });
    r.edit({ url: 'https://svc2.example', 'accounts.alice': 'login' });
    expect(r.warnings).to.deep.equal([
      "url changed: svc reads it at start (it is the bundled identity provider's issuer); restart svc to apply the change (a rollout: until then this replica keeps the url from its start)",
    ]);
    expect(await r.pending()).to.equal('1');
    r.edit({ url: 'https://svc.example' });
    expect(await r.pending()).to.equal('0');
  });

  it('without it, url applies live: nothing is pending', async () => {
    const r = replica(false);
    r.edit({ url: 'https://svc2.example' });
    expect(r.warnings).to.deep.equal([]);
    expect(await r.pending()).to.equal('0');
  });
});
