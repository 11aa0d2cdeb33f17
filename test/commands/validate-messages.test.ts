/**
 * One text per mistake (issue 23, items 8 and 9): for each, `svc-server validate` and a server
 * started on the same files say the same thing (the server after "configuration problem: " or
 * "configuration warning: "), and the text is the one an operator can act on: every problem of
 * an entry at once, values quoted, missing Secrets and keys named, no zod wording, Argo CD's
 * forms and misspelt keys answered with the svc form.
 */
import { expect } from 'chai';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import YAML from 'yaml';
import { runValidate } from '../../src/commands/validate.js';
import { configMap, secret, tempConfigDir } from '../helpers/manifests.js';
import { startTestServer } from '../helpers/server.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const URL_ = 'https://svc.example.org';
const KEY = 'validate-messages-secret-key-0123456789';

interface Case {
  readonly mistake: string;
  readonly cm?: Record<string, string>;
  readonly rbac?: string;
  /** Keys of svc-secret besides server.secretkey. */
  readonly secret?: Record<string, string>;
  /** More files of the store (another Secret). */
  readonly secretFiles?: Record<string, string>;
  /** Text that must appear in neither output (a Secret's value). */
  readonly never?: string;
  /** Lines validate and the server must both say (validate's warnings start with "warning: "). */
  readonly says: readonly string[];
}

const ldap = (config: Record<string, unknown>) => YAML.stringify({ connectors: [{ type: 'ldap', id: 'corp', name: 'Corp', config }] });
const extension = (service: Record<string, unknown>) => YAML.stringify({ extensions: [{ name: 'metrics', enabled: true, backend: { services: [service] } }] });

const CASES: readonly Case[] = [
  {
    mistake: 'a url that is not one, the same words at start, while running and in validate',
    cm: { url: 'localhost:8080' },
    says: ["svc-cm: url: 'localhost:8080' is not an http(s) URL (did you mean 'http://localhost:8080'?); the previous value stays in force (at start: 'http://127.0.0.1:8080')"],
  },
  {
    mistake: 'a bad secret reference beside two unknown keys: all three',
    cm: { 'oidc.config': 'name: Corp\nissuer: https://sso.example.org\nclientID: svc\nclientSecret: $corp-sso:client.secret\nclientsecret2: x\nscopes: [groups]\n' },
    says: [
      "svc-cm: oidc.config: clientSecret: references Secret 'corp-sso', which does not exist",
      "svc-cm: oidc.config: clientsecret2: unknown key; did you mean 'clientSecret'?",
      'svc-cm: oidc.config: scopes: unknown key',
    ],
  },
  {
    mistake: 'a missing TLS Secret of an LDAP connector: the references, and nothing said of the values standing in for them',
    cm: { 'idp.config': ldap({ host: 'ldap.example.org', rootCAData: '$ldap-tls:ca.crt', clientCert: '$ldap-tls:tls.crt', clientKey: '$ldap-tls:tls.key', userSearch: { baseDN: 'ou=people,dc=example,dc=org', username: 'uid', idAttr: 'uid' } }) },
    says: [
      "svc-cm: idp.config: connectors[0].config.rootCAData: references Secret 'ldap-tls', which does not exist",
      "svc-cm: idp.config: connectors[0].config.clientCert: references Secret 'ldap-tls', which does not exist",
      "svc-cm: idp.config: connectors[0].config.clientKey: references Secret 'ldap-tls', which does not exist",
    ],
  },
  {
    mistake: 'a missing key of svc-secret, named',
    cm: { 'oidc.config': 'name: Corp\nissuer: https://sso.example.org\nclientID: svc\nclientSecret: $oidc.clientSecret\n' },
    says: ["svc-cm: oidc.config: clientSecret: references key 'oidc.clientSecret' of Secret 'svc-secret', which has no such key"],
  },
  {
    mistake: "a connector's password read from svc's own key: refused, named, and its value never said",
    cm: { 'idp.config': ldap({ host: 'ldap.example.org', bindDN: 'cn=reader', bindPW: '$server.secretkey', userSearch: { baseDN: 'ou=people,dc=example,dc=org', username: 'uid', idAttr: 'uid' } }) },
    never: KEY,
    says: ["svc-cm: idp.config: connectors[0].config.bindPW: references key 'server.secretkey' of Secret 'svc-secret', which svc keeps for itself (svc-secret's server.* keys hold svc's session and API token signing key); configuration may not read it"],
  },
  {
    mistake: 'a typo in the key of a Secret reference, named in full',
    cm: { 'idp.config': ldap({ host: 'ldap.example.org', bindDN: 'cn=reader', bindPW: '$ldap-reader:bindPw', userSearch: { baseDN: 'ou=people,dc=example,dc=org', username: 'uid', idAttr: 'uid' } }) },
    secretFiles: { 'ldap-reader.yaml': secret('ldap-reader', { bindPW: 'reader-pw' }) },
    never: 'reader-pw',
    says: ["svc-cm: idp.config: connectors[0].config.bindPW: references key 'bindPw' of Secret 'ldap-reader', which has no such key"],
  },
  {
    mistake: 'a required key left out, without zod wording',
    cm: { 'idp.config': ldap({ host: 'ldap.example.org' }) },
    says: ['svc-cm: idp.config: connectors[0].config.userSearch: required'],
  },
  {
    mistake: 'an ldaps:// URL as the LDAP host, beside an unknown key',
    cm: { 'idp.config': ldap({ host: 'ldaps://ldap.example.org', usesSSL: true, userSearch: { baseDN: 'ou=people,dc=example,dc=org', username: 'uid', idAttr: 'uid' } }) },
    says: [
      'svc-cm: idp.config: connectors[0].config.usesSSL: unknown key',"svc-cm: idp.config: connectors[0].config.host: 'ldaps://ldap.example.org' has a scheme: write host[:port] ('ldap.example.org'); TLS (ldaps) is the default"],
  },
  {
    mistake: 'redirectURI in oidc.config: the URL svc sends',
    cm: { 'oidc.config': 'name: Corp\nissuer: https://sso.example.org\nclientID: svc\nclientSecret: x\nredirectURI: https://svc.example.org/oidc/callback\n' },
    says: [`svc-cm: oidc.config: redirectURI: is not a key here: svc sends '${URL_}/auth/callback' (or '${URL_}/pkce/verify' with enablePKCEAuthentication), from the url of svc-cm; register that URL at the provider`],
  },
  {
    mistake: "Argo CD's dex.config",
    cm: { 'dex.config': 'connectors: []\n' },
    says: ["svc-cm: dex.config: unknown key: Argo CD's dex.config is idp.config here (the bundled identity provider; docs/idp.md)"],
  },
  {
    mistake: 'a misspelt key of svc-cm',
    cm: { 'users.sesion.duration': '8h' },
    says: ["svc-cm: users.sesion.duration: unknown key; did you mean 'users.session.duration'?"],
  },
  {
    mistake: "Argo CD's cluster: {name} in an extension",
    cm: { 'extension.config': extension({ url: 'http://metrics.example.org', cluster: { name: 'in-cluster' } }) },
    says: ["svc-cm: extension.config: extensions[0].backend.services[0].cluster: unknown key: Argo CD's cluster: {name: …} is clusterName: … here (the name of the cluster Secret)"],
  },
  {
    mistake: 'wrong types and values in a connector config: each value quoted, zod\'s words nowhere',
    cm: { 'idp.config': ldap({ host: 'ldap.example.org', insecureNoSSL: 'yes', bindDN: 'cn=reader,dc=example,dc=org', bindPW: 12345, userSearch: { baseDN: 'ou=people,dc=example,dc=org', username: 'uid', idAttr: 'uid', scope: 'base' } }) },
    says: [
      "svc-cm: idp.config: connectors[0].config.insecureNoSSL: 'yes' must be true or false, not a string",
      "svc-cm: idp.config: connectors[0].config.userSearch.scope: 'base' must be one of 'sub', 'one'",
      // A key named like a password: its value is never quoted, whatever it is.
      'svc-cm: idp.config: connectors[0].config.bindPW: must be a string, not a number',
    ],
  },
  {
    mistake: 'a value read from a Secret is never quoted, a value written in the ConfigMap is',
    cm: { 'oidc.config': 'name: Corp\nissuer: $oidc.issuer\nclientID: svc\nclientSecret: $oidc.clientSecret\nrootCA: /etc/ssl/corp.pem\n' },
    secret: { 'oidc.issuer': 'sso.example.org-s3cr3t', 'oidc.clientSecret': 'x' },
    never: 's3cr3t',
    says: [
      'svc-cm: oidc.config: issuer: not an http(s) URL',
      "svc-cm: oidc.config: rootCA: '/etc/ssl/corp.pem' is not a PEM certificate",
    ],
  },
  {
    mistake: 'an extension: the URL quoted without its password, the duration quoted',
    cm: { 'extension.config': YAML.stringify({ extensions: [{ name: 'metrics', enabled: true, backend: { idleConnTimeout: 'soon', services: [{ url: 'ftp://ops:hunter2@metrics.example.org' }] } }] }) },
    never: 'hunter2',
    says: [
      "svc-cm: extension.config: extensions[0].backend.idleConnTimeout: 'soon' is not a duration (for example 30s, 2m)",
      "svc-cm: extension.config: extensions[0].backend.services[0].url: 'ftp://…@metrics.example.org' is not a URL (want http:// or https:// with a host, without query or fragment)",
    ],
  },
  {
    mistake: 'a workload issuer: the values quoted, the entry set aside',
    cm: { 'workload.config': YAML.stringify([{ name: 'ci', issuer: 'http://token.actions.example.org', audiences: ['svc'], subject: '{{sub' }]) },
    says: [
      "svc-cm: workload.config[0].issuer: 'http://token.actions.example.org' is not an https:// URL without query or fragment (an issuer is only trusted over TLS)",
      "svc-cm: workload.config[0].subject: '{{sub' is not a template: has an unbalanced {{ or }}",
      'svc-cm: workload.config[0]: entry is invalid and is ignored',
    ],
  },
  {
    mistake: 'a bundled provider\'s client: the id and the connector type quoted',
    cm: { 'idp.config': YAML.stringify({ connectors: [{ type: 'kerberos', id: 'Corp_1', name: 'Corp', config: {} }] }) },
    says: [
      "svc-cm: idp.config: connectors[0].type: 'kerberos' is not a connector type: one of ldap, saml, github, gitlab, oidc, microsoft, google",
      "svc-cm: idp.config: connectors[0].id: 'Corp_1': lower-case letters, digits, \"-\" and \"_\" only",
    ],
  },
  {
    mistake: 'a registered application\'s redirect URI: quoted, its password masked',
    cm: { 'idp.config': YAML.stringify({ connectors: [{ type: 'ldap', id: 'corp', name: 'Corp', config: { host: 'ldap.example.org', userSearch: { baseDN: 'ou=people,dc=example,dc=org', username: 'uid', idAttr: 'uid' } } }], staticClients: [{ id: 'wiki', name: 'Wiki', public: true, redirectURIs: ['https://ops:hunter2@wiki.example.org/cb#x'] }] }) },
    never: 'hunter2',
    says: ["svc-cm: idp.config: staticClients[0].redirectURIs[0]: 'https://…@wiki.example.org/cb#x' must not have a fragment (#)"],
  },
  {
    mistake: 'rights lines that cannot mean what they say',
    rbac: 'p, role:ops, extensions, invoke, metrics, allow\np, role:ops, applicatons, get, */*, allow\np, role:ops, applications, sink, */*, allow\ng, ops-team, role:opps\ng, Admin, role:ops\n',
    says: [
      'svc-rbac-cm: policy.csv: line 1: unknown method "invoke" for extensions (want * or one of get, post, put, patch, delete, head, options); Argo CD\'s \'invoke\' is \'*\' here, the previous version of policy.csv stays in force (at start: the line is ignored): "p, role:ops, extensions, invoke, metrics, allow"',
      "warning: svc-rbac-cm: policy.csv: line 2: resource 'applicatons' is not one svc checks (accounts, extensions, applications, clusters, projects, logs, tokens): this line grants nothing; did you mean 'applications'?",
      "warning: svc-rbac-cm: policy.csv: line 3: action 'sink' is not one svc checks on applications (get, create, update, delete, sync): this line grants nothing",
      "warning: svc-rbac-cm: policy.csv: line 4: role 'role:opps' has no p line (nor a role with one): its members get nothing from it",
      "warning: svc-rbac-cm: policy.csv: line 5: 'Admin' can never match: a single sign-on name like it is not used for rights (it is the name of the built-in local account 'admin'), and local account names are lower-case",
    ],
  },
  {
    mistake: 'an extensions line whose action is not one method in lower case',
    rbac: 'p, role:ops, extensions, GET, */metrics, allow\np, role:ops, extensions, "{get,post}", */metrics, allow\np, role:ops, extensions, fetch, */metrics, deny\n',
    says: [
      'svc-rbac-cm: policy.csv: line 1: unknown method "GET" for extensions (want * or one of get, post, put, patch, delete, head, options); methods are written in lower case: \'get\', the previous version of policy.csv stays in force (at start: the line is ignored): "p, role:ops, extensions, GET, */metrics, allow"',
      'svc-rbac-cm: policy.csv: line 2: unknown method "{get,post}" for extensions (want * or one of get, post, put, patch, delete, head, options); write one line per method, the previous version of policy.csv stays in force (at start: the line is ignored): "p, role:ops, extensions, \\"{get,post}\\", */metrics, allow"',
      'svc-rbac-cm: policy.csv: line 3: unknown method "fetch" for extensions (want * or one of get, post, put, patch, delete, head, options), the previous version of policy.csv stays in force (at start: the line is ignored): "p, role:ops, extensions, fetch, */metrics, deny"',
    ],
  },
];

function collector(): Writable & { lines: () => string[] } {
  const chunks: string[] = [];
  return Object.assign(new Writable({ write(c: Buffer, _e, done) { chunks.push(c.toString()); done(); } }), { lines: () => chunks.join('').split('\n').filter((l) => l !== '') });
}

describe('svc-server validate and the server: the same text for the same mistake', function () {
  cleanUpTempDirs();
  this.timeout(30_000);

  for (const c of CASES) {
    it(c.mistake, async function () {
      const dir = tempConfigDir({
        'svc-cm.yaml': configMap('svc-cm', { url: URL_, ...c.cm }),
        'svc-rbac-cm.yaml': configMap('svc-rbac-cm', { 'policy.csv': c.rbac ?? '' }),
        'svc-secret.yaml': secret('svc-secret', { 'server.secretkey': KEY, ...c.secret }),
        ...c.secretFiles,
      });
      try {
        const out = collector();
        const err = collector();
        await runValidate(dir, out, err);
        const validated = err.lines().filter((l) => !/^\d+ problems? found$/.test(l));
        const server = await startTestServer(dir);
        const logged = server.logs().split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as { msg: string })
          .flatMap(({ msg }) => (msg.startsWith('configuration problem: ') ? [msg.slice('configuration problem: '.length)] : msg.startsWith('configuration warning: ') ? [`warning: ${msg.slice('configuration warning: '.length)}`] : []));
        await server.close(1000);
        expect(validated, 'validate').to.have.members([...c.says]);
        expect(logged, 'the server log').to.have.members([...c.says]);
        for (const line of validated) expect(line).not.to.match(/Invalid input|expected \w+, received/);
        if (c.never !== undefined) expect(JSON.stringify([validated, server.logs()])).not.to.include(c.never);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });
  }

  it('says of a url broken while the server runs what validate says of it', async function () {
    const files = (url: string) => ({
      'svc-cm.yaml': configMap('svc-cm', { url }),
      'svc-rbac-cm.yaml': configMap('svc-rbac-cm', { 'policy.csv': '' }),
      'svc-secret.yaml': secret('svc-secret', { 'server.secretkey': KEY }),
    });
    const dir = tempConfigDir(files(URL_));
    const server = await startTestServer(dir);
    try {
      await writeFile(join(dir, 'svc-cm.yaml'), files('https://svc.example.org/?tenant=a')['svc-cm.yaml']);
      const said = "svc-cm: url: 'https://svc.example.org/?tenant=a' must not have a query or fragment; the previous value stays in force (at start: 'http://127.0.0.1:8080')";
      // Waits for the line itself: other changes are applied at start too (svc writes keys it lacks into svc-secret).
      for (let i = 0; i < 100 && !server.logs().includes('configuration problem: svc-cm: url'); i++) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(server.logs()).to.include(`"msg":"configuration problem: ${said.replace(/"/g, '\\"')}"`);
      expect(server.services.settings.current().url, 'the url in force').to.equal(URL_);
      const err = collector();
      await runValidate(dir, collector(), err);
      expect(err.lines()[0]).to.equal(said);
    } finally {
      await server.close(1000);
      await rm(dir, { recursive: true, force: true });
    }
  });
});
