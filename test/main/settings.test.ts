import { expect } from 'chai';
import { formatProblem } from '../../src/config/problems.js';
import { parseSettings, settingsParserFor } from '../../src/main/settings.js';
import { DEFAULT_SESSION_DURATION_MS } from '../../src/session/settings-section.js';
import type { ConfigMapObject, SecretObject, StoreSnapshot } from '../../src/config/manifests.js';
import { createEnforcer } from '../../src/rbac/enforcer.js';

function snapshot(parts: { cm?: Record<string, string>; rbac?: Record<string, string>; secret?: Record<string, string>; secrets?: SecretObject[] }): StoreSnapshot {
  const configMaps = new Map<string, ConfigMapObject>();
  if (parts.cm) configMaps.set('svc-cm', { name: 'svc-cm', file: 'cm.yaml', data: parts.cm });
  if (parts.rbac) configMaps.set('svc-rbac-cm', { name: 'svc-rbac-cm', file: 'rbac.yaml', data: parts.rbac });
  const secrets = new Map<string, SecretObject>();
  secrets.set('svc-secret', { name: 'svc-secret', file: 's.yaml', labels: {}, data: { 'server.secretkey': 'k', ...parts.secret } });
  for (const s of parts.secrets ?? []) secrets.set(s.name, s);
  return { configMaps, secrets, applications: [] };
}

function messages(snap: StoreSnapshot): string[] {
  return parseSettings(snap).problems.map(formatProblem);
}

const goodExtension = `extensions:
  - name: metrics
    enabled: true
    backend:
      services:
        - url: http://127.0.0.1:9000/base
`;

describe('settingsParserFor', () => {
  it('names the listen address, not 8080, as what a bad url falls back to, and suggests the scheme it lacks', () => {
    const parse = settingsParserFor('http://127.0.0.1:31080');
    const { settings, problems } = parse(snapshot({ cm: { url: '127.0.0.1:31080' } }));
    expect(problems.map(formatProblem)).to.deep.equal([
      "svc-cm: url: '127.0.0.1:31080' is not an http(s) URL (did you mean 'http://127.0.0.1:31080'?); the previous value stays in force (at start: 'http://127.0.0.1:31080')",
    ]);
    expect(settings.url).to.equal('http://127.0.0.1:31080');
    expect(parse(snapshot({})).settings.url, 'no url: the listen address').to.equal('http://127.0.0.1:31080');
  });
});

describe('parseSettings', () => {
  it('gives the defaults for an empty store', () => {
    const { settings, problems } = parseSettings(snapshot({}));
    expect(problems).to.deep.equal([]);
    expect(settings.url).to.equal('http://127.0.0.1:8080');
    expect(settings.sessionDurationMs).to.equal(DEFAULT_SESSION_DURATION_MS);
    expect([...settings.accounts.keys()]).to.deep.equal(['admin']);
    expect(settings.extensions).to.deep.equal([]);
  });

  it('reports every problem of one change at once, each with its key path', () => {
    const problems = messages(snapshot({
      cm: {
        'unknown.key': 'x',
        'accounts.this-name-is-far-too-long-for-an-account-1': 'apiKey',
        'extension.config': `extensions:
  - name: good
    enabled: true
    backend: { services: [ { url: "http://127.0.0.1:1" } ] }
  - name: bad
    enabled: true
    backend: { services: [ { url: "not a url" } ] }
`,
        'oidc.config': 'issuer: https://idp.example.com\nclientID: svc\nclientSecret: $missing:key\n',
      },
      rbac: { 'policy.csv': 'p, role:a, extensions, *, */*, allow\nq, broken line\n' },
    }));
    expect(problems).to.include('svc-cm: unknown.key: unknown key');
    expect(problems).to.include("svc-cm: accounts.this-name-is-far-too-long-for-an-account-1: username 'this-name-is-far-too-long-for-an-account-1' is longer than 32 characters");
    expect(problems).to.include("svc-cm: extension.config: extensions[1].backend.services[0].url: 'not a url' is not a URL (want http:// or https:// with a host, without query or fragment)");
    expect(problems).to.include("svc-cm: oidc.config: clientSecret: references Secret 'missing', which does not exist");
    expect(problems.some((p) => p.startsWith('svc-rbac-cm: policy.csv: line 2'))).to.equal(true, problems.join('\n'));
  });

  it('keeps the good extensions when one is bad, and the last good version of the bad one', () => {
    const first = parseSettings(snapshot({ cm: { 'extension.config': goodExtension } })).settings;
    const broken = goodExtension.replace('http://127.0.0.1:9000/base', 'ftp://nowhere') + `  - name: other
    enabled: false
    backend:
      services: [ { url: "https://backend.example.com" } ]
`;
    const { settings, problems } = parseSettings(snapshot({ cm: { 'extension.config': broken } }), first);
    expect(problems).to.have.length(1);
    expect(settings.extensions.map((e) => [e.name, e.services[0]?.url])).to.deep.equal([
      ['metrics', 'http://127.0.0.1:9000/base'],
      ['other', 'https://backend.example.com'],
    ]);
  });

  it('rejects extension.config whole when its YAML does not parse, keeping the previous list', () => {
    const first = parseSettings(snapshot({ cm: { 'extension.config': goodExtension } })).settings;
    const { settings, problems } = parseSettings(snapshot({ cm: { 'extension.config': 'extensions: [ {name: x' } }), first);
    expect(settings.extensions).to.equal(first.extensions);
    expect(formatProblem(problems[0]!)).to.match(/^svc-cm: extension.config: YAML does not parse, the previous value stays in force/);
  });

  it('requires a clusterName on every service when there are several', () => {
    const problems = messages(snapshot({ cm: { 'extension.config': `extensions:
  - name: multi
    enabled: true
    backend:
      idleConnTimeout: 5s
      services:
        - url: http://a:1
          clusterName: in-cluster
        - url: http://b:1
` } }));
    expect(problems).to.deep.equal(['svc-cm: extension.config: extensions[0].backend.services[1].clusterName: is required when there are several services']);
  });

  it('resolves $key from svc-secret and $secret:key from a labelled secret, and refuses an unlabelled one', () => {
    const labelled: SecretObject = { name: 'oidc', file: 'o.yaml', labels: { 'app.kubernetes.io/part-of': 'svc' }, data: { secret: 's3cret' } };
    const unlabelled: SecretObject = { name: 'other', file: 'x.yaml', labels: {}, data: { secret: 'nope' } };
    const ok = parseSettings(snapshot({ cm: { 'oidc.config': 'issuer: https://idp.example.com\nclientID: svc\nclientSecret: $oidc:secret\n' }, secrets: [labelled] }));
    expect(ok.problems).to.deep.equal([]);
    expect(ok.settings.oidc?.clientSecret).to.equal('s3cret');
    expect(ok.settings.oidc?.audiences).to.deep.equal(['svc']);
    const own = parseSettings(snapshot({ cm: { 'oidc.config': 'issuer: https://idp.example.com\nclientID: svc\nclientSecret: $oidc.secret\n' }, secret: { 'oidc.secret': 'mine' } }));
    expect(own.settings.oidc?.clientSecret).to.equal('mine');
    const refused = messages(snapshot({ cm: { 'oidc.config': 'issuer: https://idp.example.com\nclientID: svc\nclientSecret: $other:secret\n' }, secrets: [unlabelled] }));
    expect(refused).to.deep.equal(["svc-cm: oidc.config: clientSecret: references secret 'other', which lacks the label app.kubernetes.io/part-of: svc"]);
  });

  it('gives oidc.config its documented defaults', () => {
    const { settings } = parseSettings(snapshot({ cm: { 'oidc.config': 'issuer: https://idp.example.com\nclientID: svc\nclientSecret: x\ncliClientID: cli\n' } }));
    expect(settings.oidc?.requestedScopes).to.deep.equal(['openid', 'profile', 'email', 'groups']);
    expect(settings.oidc?.skipAudienceCheckWhenTokenHasNoAudience).to.equal(false);
    expect(settings.oidc?.enablePKCEAuthentication).to.equal(false);
    expect(settings.oidc?.audiences).to.deep.equal(['svc', 'cli']);
  });

  it('refuses redirectURI in a connector and keeps the other connectors', () => {
    const { settings, problems } = parseSettings(snapshot({ cm: { 'idp.config': `connectors:
  - type: github
    id: github
    name: GitHub
    config: { clientID: a, clientSecret: b, redirectURI: "https://evil/cb", orgs: [ { name: acme } ] }
  - type: oidc
    id: corp
    name: Corp
    config: { clientID: a, clientSecret: b, issuer: "https://corp.example.com" }
` } }));
    expect(problems.map(formatProblem)).to.deep.equal(['svc-cm: idp.config: connectors[0].config.redirectURI: must not be set: svc gives the connector <url>/api/idp/callback (with the url of svc-cm) as its callback; register that URL upstream']);
    expect(settings.idp?.connectors.map((c) => c.id)).to.deep.equal(['corp']);
  });

  it('takes only http(s) URLs from a connector, never javascript: or file:', () => {
    const { settings, problems } = parseSettings(snapshot({ cm: { 'idp.config': `connectors:
  - type: gitlab
    id: gitlab
    name: GitLab
    config: { clientID: a, clientSecret: b, baseURL: "javascript:alert(1)" }
  - type: oidc
    id: corp
    name: Corp
    config: { clientID: a, clientSecret: b, issuer: "file:///etc/passwd" }
  - type: oidc
    id: ok
    name: OK
    config: { clientID: a, clientSecret: b, issuer: "https://corp.example.com" }
` } }));
    expect(problems.map(formatProblem)).to.deep.equal([
      "svc-cm: idp.config: connectors[0].config.baseURL: 'javascript:alert(1)' is not an http(s) URL",
      "svc-cm: idp.config: connectors[1].config.issuer: 'file:///etc/passwd' is not an http(s) URL",
    ]);
    expect(settings.idp?.connectors.map((c) => c.id)).to.deep.equal(['ok']);
  });

  it('parses accounts with capabilities, enabled flags and their secrets', () => {
    const { settings, problems } = parseSettings(snapshot({
      cm: { 'accounts.alice': 'apiKey, login', 'accounts.bob': 'apiKey', 'accounts.bob.enabled': 'false', 'admin.enabled': 'false' },
      secret: { 'accounts.alice.password': '$2b$10$hash', 'accounts.alice.passwordMtime': '2026-01-01T00:00:00Z', 'accounts.alice.tokens': '[{"id":"ci","iat":1700000000}]' },
    }));
    expect(problems).to.deep.equal([]);
    expect([...settings.accounts.keys()]).to.deep.equal(['alice', 'bob']);
    expect(settings.accounts.get('alice')).to.deep.include({ enabled: true, capabilities: ['apiKey', 'login'], passwordHash: '$2b$10$hash' });
    expect(settings.accounts.get('alice')?.tokens).to.deep.equal([{ id: 'ci', iat: 1700000000 }]);
    expect(settings.accounts.get('bob')?.enabled).to.equal(false);
  });

  it('names bad values of simple keys', () => {
    expect(messages(snapshot({ cm: { 'users.session.duration': 'forever', 'oidc.tls.insecure.skip.verify': 'yes', url: 'localhost' } }))).to.deep.equal([
      "svc-cm: url: 'localhost' is not an http(s) URL; the previous value stays in force (at start: 'http://127.0.0.1:8080')",
      "svc-cm: users.session.duration: 'forever' is not a duration (for example 24h, 90m); the previous value stays in force (at start: '24h')",
      `svc-cm: oidc.tls.insecure.skip.verify: must be "true" or "false", not 'yes'`,
    ]);
    // svc's own address ends in /api/...: a query, a fragment or credentials would break every callback.
    expect(messages(snapshot({ cm: { url: 'https://svc.example.com/#x' } }))).to.deep.equal(["svc-cm: url: 'https://svc.example.com/#x' must not have a query or fragment; the previous value stays in force (at start: 'http://127.0.0.1:8080')"]);
    expect(messages(snapshot({ cm: { url: 'https://svc.example.com/?a=1' } }))).to.deep.equal(["svc-cm: url: 'https://svc.example.com/?a=1' must not have a query or fragment; the previous value stays in force (at start: 'http://127.0.0.1:8080')"]);
    expect(messages(snapshot({ cm: { url: 'https://me:pw@svc.example.com' } }))).to.deep.equal(['svc-cm: url: must not carry a user name or password; the previous value stays in force (at start: \'http://127.0.0.1:8080\')']);
  });

  it('reports a missing server.secretkey', () => {
    const snap = snapshot({});
    const secrets = new Map(snap.secrets);
    secrets.set('svc-secret', { name: 'svc-secret', file: 's.yaml', labels: {}, data: {} });
    expect(messages({ ...snap, secrets })).to.deep.equal(['svc-secret: server.secretkey: is missing; the previous value stays in force (at start: no key, so tokens cannot be issued or verified)']);
  });

  it('keeps the last good url, server.secretkey and users.session.duration when a change breaks them', () => {
    const good = parseSettings(snapshot({ cm: { url: 'https://svc.example.com', 'users.session.duration': '1h' }, secret: { 'server.secretkey': 'good-key' } })).settings;
    const snap = snapshot({ cm: { url: 'https//svc.example.com', 'users.session.duration': '1 h' } });
    const secrets = new Map(snap.secrets);
    secrets.set('svc-secret', { name: 'svc-secret', file: 's.yaml', labels: {}, data: { 'server.secretkey': '' } });
    const { settings, problems } = parseSettings({ ...snap, secrets }, good);
    expect(problems.map(formatProblem)).to.deep.equal([
      "svc-cm: url: 'https//svc.example.com' is not an http(s) URL; the previous value stays in force (at start: 'http://127.0.0.1:8080')",
      'svc-secret: server.secretkey: is missing; the previous value stays in force (at start: no key, so tokens cannot be issued or verified)',
      "svc-cm: users.session.duration: '1 h' is not a duration (for example 24h, 90m); the previous value stays in force (at start: '24h')",
    ]);
    expect(settings.url).to.equal('https://svc.example.com');
    expect(settings.serverSecretKey).to.equal('good-key');
    expect(settings.sessionDurationMs).to.equal(3_600_000);
  });

  it('keeps a deny in force when a live edit makes its line malformed', async () => {
    const policy = 'p, alice, extensions, *, */*, allow\np, alice, extensions, *, prod/*, deny';
    const good = parseSettings(snapshot({ rbac: { 'policy.csv': policy } })).settings;
    const edited = policy.replace('prod/*, deny', 'prod/*, deny, # no prod');
    const { settings, problems } = parseSettings(snapshot({ rbac: { 'policy.csv': edited } }), good);
    expect(problems.map(formatProblem)).to.deep.equal([
      'svc-rbac-cm: policy.csv: line 2: a p line has 5 or 6 fields (p, subject, resource, action, object[, allow|deny]), found 7, the previous version of policy.csv stays in force (at start: the line is ignored): "p, alice, extensions, *, prod/*, deny, # no prod"',
    ]);
    const enforcer = await createEnforcer(settings.policy);
    expect(enforcer.can(['alice'], 'extensions', 'get', 'prod/metrics')).to.equal(false);
    expect(enforcer.can(['alice'], 'extensions', 'get', 'dev/metrics')).to.equal(true);
  });

  it('reads every policy.<x>.csv overlay, dots in <x> included, as Argo CD does', async () => {
    const { settings, problems } = parseSettings(
      snapshot({ rbac: { 'policy.csv': 'p, alice, extensions, *, */*, allow', 'policy.team.a.csv': 'p, alice, extensions, *, prod/*, deny' } }),
    );
    expect(problems.map(formatProblem)).to.deep.equal([]);
    const enforcer = await createEnforcer(settings.policy);
    expect(enforcer.can(['alice'], 'extensions', 'get', 'prod/metrics')).to.equal(false);
    expect(enforcer.can(['alice'], 'extensions', 'get', 'dev/metrics')).to.equal(true);
  });

  it('names a mistyped key in full (a name is no secret), and never a key run together with its value', () => {
    const typed = messages(snapshot({ cm: { 'oidc.config': 'issuer: https://idp.example.com\nclientID: svc\nclientSecret: $oidc.clientsecret\n' } }));
    expect(typed).to.deep.equal(["svc-cm: oidc.config: clientSecret: references key 'oidc.clientsecret' of Secret 'svc-secret', which has no such key"]);
    const builtIn = messages(snapshot({ cm: { 'oidc.config': 'issuer: https://idp.example.com\nclientID: svc\nclientSecret: $toString\n' } }));
    expect(builtIn, 'an Object.prototype member is no key').to.deep.equal(["svc-cm: oidc.config: clientSecret: references key 'toString' of Secret 'svc-secret', which has no such key"]);
    const runTogether = messages(snapshot({ cm: { 'oidc.config': '{issuer: https://idp.example.com, clientID: svc, clientSecret:Sup3rS3cretVal}' } }));
    expect(runTogether.join('\n')).to.not.include('Sup3r');
    expect(runTogether.join('\n')).to.include("<a key with ':' or '=' in it, not shown: clientSecret…>: unknown key");
  });

  it('never repeats a value that starts with $ but is not a secret reference', () => {
    const problems = messages(snapshot({ cm: { 'oidc.config': 'issuer: https://idp.example.com\nclientID: svc\nclientSecret: "$Tr0ub4dor&3-horse battery"\n' } }));
    expect(problems).to.deep.equal(['svc-cm: oidc.config: clientSecret: is not a secret reference: use $<key> or $<secret>:<key>']);
  });

  it('never repeats the text of a YAML value that cannot be read', () => {
    const problems = messages(snapshot({ cm: { 'oidc.config': 'issuer: https://idp.example.com\nclientID: svc\nclientSecret: *s3cretVALUE\n' } }));
    expect(problems).to.deep.equal(['svc-cm: oidc.config: YAML does not parse, the previous value stays in force: An alias names an anchor that is not set before it']);
    const escaped = messages(snapshot({ cm: { 'oidc.config': 'clientSecret: "s3cret\\qVALUE"\n' } }));
    expect(escaped).to.deep.equal(['svc-cm: oidc.config: YAML does not parse, the previous value stays in force: Invalid escape sequence in a double-quoted string at line 1, column 22']);
  });
});
