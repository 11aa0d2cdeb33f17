import { expect } from 'chai';
import { rmSync } from 'node:fs';
import YAML from 'yaml';
import { runValidate } from '../../src/commands/validate.js';
import { configMap, secret, tempConfigDir } from '../helpers/manifests.js';
import { textSink } from '../helpers/text-sink.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';


describe('svc-server validate: single sign-on in force', () => {
  cleanUpTempDirs();
  it('says the external provider is in force when oidc.config and idp.config are both set', async () => {
    const dir = tempConfigDir({
      'svc-cm.yaml': configMap('svc-cm', {
        url: 'https://svc.example.com',
        'oidc.config': YAML.stringify({ issuer: 'https://idp.example.com', clientID: 'svc', clientSecret: '$oidc.secret' }),
        'idp.config': YAML.stringify({ connectors: [] }),
      }),
      'svc-secret.yaml': secret('svc-secret', { 'server.secretkey': 'k'.repeat(32), 'oidc.secret': 's' }),
    });
    try {
      const out = textSink();
      const err = textSink();
      await runValidate(dir, out.stream, err.stream);
      expect(out.text()).to.include('single sign-on: the external OIDC provider (oidc.config) is in force; idp.config is also set and is not used');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
