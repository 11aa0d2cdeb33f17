/**
 * `svc-server validate` knows the claim rules (docs/claims.md): a bad expression is a problem
 * naming its key with CEL's message, and a misspelt key gets "did you mean", in oidc.config and
 * in a connector's config; the server's /readyz says the same of the running configuration.
 */
import { expect } from 'chai';
import { Writable } from 'node:stream';
import YAML from 'yaml';
import { runValidate } from '../../src/commands/validate.js';
import { configMap, secret, tempConfigDir } from '../helpers/manifests.js';
import { startTestServer } from '../helpers/server.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

function collector(): Writable & { lines: () => string[] } {
  const chunks: string[] = [];
  return Object.assign(new Writable({ write(c: Buffer, _e, done) { chunks.push(c.toString()); done(); } }), { lines: () => chunks.join('').split('\n').filter((l) => l !== '') });
}

const OIDC = {
  issuer: 'https://sso.example.org', clientID: 'svc', clientSecret: 's',
  claimValidationRules: [{ expression: 'claims.email_verified ==', message: 'verify your email' }],
  userValidationRule: [],
};
const IDP = {
  connectors: [{
    type: 'ldap', id: 'corp', name: 'Corp',
    config: {
      host: 'ldap.example.org:636', userSearch: { baseDN: 'ou=people', username: 'uid', idAttr: 'uid' },
      claimMappings: { groups: { expression: 'claims.groups.exists(g, g == "a")' } },
      claimMapings: {},
    },
  }],
};

describe('svc-server validate: the claim rules', function () {
  cleanUpTempDirs();
  this.timeout(30_000);

  it('names the key of a bad expression with CEL\'s message, and a misspelt key with "did you mean", in oidc.config and a connector; /readyz says so too', async function () {
    const dir = tempConfigDir({
      'svc-cm.yaml': configMap('svc-cm', { url: 'https://svc.example.org', 'oidc.config': YAML.stringify(OIDC), 'idp.config': YAML.stringify(IDP) }),
      'svc-rbac-cm.yaml': configMap('svc-rbac-cm', { 'policy.csv': '' }),
      'svc-secret.yaml': secret('svc-secret', { 'server.secretkey': 'validate-claims-secret-key-0123456789' }),
    });
    const err = collector();
    await runValidate(dir, collector(), err);
    const lines = err.lines();
    expect(lines.some((l) => /^svc-cm: oidc\.config: claimValidationRules\[0\]\.expression: does not compile: <input>:1:\d+: /.test(l)), lines.join('\n')).to.equal(true);
    expect(lines).to.include.members([
      "svc-cm: oidc.config: userValidationRule: unknown key; did you mean 'userValidationRules'?",
      'svc-cm: idp.config: connectors[0].config.claimMappings.groups.expression: must give a string or a list of strings, but gives true or false',
      "svc-cm: idp.config: connectors[0].config.claimMapings: unknown key; did you mean 'claimMappings'?",
    ]);
    const server = await startTestServer(dir);
    try {
      const ready = await fetch(`${server.url}/readyz?verbose`);
      expect(await ready.text()).to.include('claimMappings.groups.expression');
    } finally {
      await server.close(1000);
    }
  });
});
