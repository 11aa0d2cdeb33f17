import { expect } from 'chai';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { openDirStore } from '../../src/config/dir-store.js';
import { createLiveSettings } from '../../src/config/live-settings.js';
import { parseSettings } from '../../src/main/settings.js';
import { configMap, secret, tempConfigDir } from '../helpers/manifests.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

describe('config/live-settings', () => {
  cleanUpTempDirs();
  it('logs each configuration problem once, when it appears, not again on every change', async () => {
    const dir = tempConfigDir({
      'cm.yaml': configMap('svc-cm', { 'no.such.key': 'x' }),
      'secret.yaml': secret('svc-secret', { 'server.secretkey': 'k' }),
    });
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(...String(chunk).split('\n').filter(Boolean));
        done();
      },
    });
    const log = pino({ level: 'warn' }, sink);
    const store = await openDirStore({ dir, log, watch: false });
    const live = createLiveSettings(store, parseSettings, log);
    const warnings = () => lines.map((l) => (JSON.parse(l) as { msg: string }).msg).filter((m) => m.startsWith('configuration problem'));
    try {
      expect(warnings()).to.deep.equal(['configuration problem: svc-cm: no.such.key: unknown key']);
      // A write elsewhere (a token, a password) reloads the store: the standing problem is not repeated.
      await store.updateSecret('svc-secret', () => ({ set: { 'webhook.token': 't' } }));
      expect(warnings()).to.have.length(1);
      writeFileSync(join(dir, 'cm.yaml'), configMap('svc-cm', { 'no.such.key': 'x', 'users.session.duration': 'forever' }));
      await store.updateSecret('svc-secret', () => ({ set: { 'webhook.token': 't2' } })); // reloads, cm.yaml included
      expect(warnings()).to.deep.equal([
        'configuration problem: svc-cm: no.such.key: unknown key',
        "configuration problem: svc-cm: users.session.duration: 'forever' is not a duration (for example 24h, 90m); the previous value stays in force (at start: '24h')",
      ]);
      expect(live.problems()).to.have.length(2);
    } finally {
      live.close();
      await store.close();
    }
  });
});
