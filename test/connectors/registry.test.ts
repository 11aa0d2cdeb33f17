import { expect } from 'chai';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { z } from 'zod';
import type { Connector, ConnectorDeps, ConnectorType, PasswordConnector } from '../../connectors/connector.js';
import { parseTypeConfig } from '../../connectors/config-schema.js';
import { CONNECTOR_TYPES, ConnectorRegistry, connectorTypes, parseConnectorConfig, type ParsedConnector } from '../../connectors/registry.js';
import { formatProblem, ProblemSink } from '../../src/config/problems.js';
import { parseIdpConfig, type IdpConfig } from '../../src/idp/connectors/config.js';
import { AT, SECRETS } from './helpers.js';

/** A connector type of the test's own: `value` is required; `failOpen: true` makes building throw. Builds and closes go to `events`. */
function fakeType(events: string[]) {
  const schema = z.strictObject({ value: z.string(), failOpen: z.boolean().default(false), redirectURI: z.string().optional() });
  return {
    type: 'fake',
    parse(input) {
      const config = parseTypeConfig(schema, input);
      if (config === undefined) return undefined;
      return (deps) => {
        if (config.failOpen) throw new Error(`cannot open ${config.value}`);
        const serial = events.filter((e) => e.startsWith('open')).length + 1; // counts across parses
        events.push(`open ${config.value}#${serial}`);
        deps.log.info('built');
        const connector: PasswordConnector = {
          kind: 'password',
          prompt: `${config.value}#${serial}`,
          login: () => Promise.resolve(null),
          close: () => {
            events.push(`close ${config.value}#${serial}`);
            return config.value === 'stuck' ? Promise.reject(new Error('socket hang up')) : Promise.resolve();
          },
        };
        return connector;
      };
    },
  } satisfies ConnectorType;
}

function idpConfig(yaml: string, events: string[], previous?: IdpConfig): { idp: IdpConfig | undefined; problems: string[] } {
  const sink = new ProblemSink();
  const idp = parseIdpConfig(yaml, SECRETS, sink.scoped('svc-cm', ['idp.config']), previous, connectorTypes(fakeType(events), ...CONNECTOR_TYPES.values()));
  return { idp, problems: sink.problems.map(formatProblem) };
}

function entries(...values: [id: string, value: string][]): string {
  return `connectors:\n${values.map(([id, value]) => `  - { type: fake, id: ${id}, name: ${id.toUpperCase()}, config: { value: ${value} } }`).join('\n')}\n`;
}

function testRegistry() {
  const lines: string[] = [];
  const log = pino({ level: 'debug' }, new Writable({ write: (chunk: Buffer, _e, done) => (lines.push(chunk.toString()), done()) }));
  const asked: string[] = [];
  const registry = new ConnectorRegistry({
    log,
    open(entry) {
      asked.push(entry.id);
      const deps: ConnectorDeps = { upstreamFetch: () => globalThis.fetch, now: () => new Date(0), log: log.child({ connector: entry.id, type: entry.type }) };
      return entry.open(deps);
    },
  });
  const prompts = () => registry.list().map((live) => `${live.id}=${(live.connector as PasswordConnector).prompt}`);
  return { registry, lines, asked, prompts };
}

describe('connector registry', () => {
  describe('types', () => {
    it('knows ldap, saml, github, gitlab, oidc, microsoft and google by name', () => {
      expect([...CONNECTOR_TYPES.keys()]).to.deep.equal(['ldap', 'saml', 'github', 'gitlab', 'oidc', 'microsoft', 'google']);
      for (const [name, type] of CONNECTOR_TYPES) expect(type.type).to.equal(name);
    });

    it('refuses redirectURI for every type, whatever its own schema takes', () => {
      const types = connectorTypes(fakeType([]), ...CONNECTOR_TYPES.values());
      for (const type of types.keys()) {
        const sink = new ProblemSink();
        const factory = parseConnectorConfig(type, { raw: { redirectURI: 'https://evil.example.com/cb' }, secrets: SECRETS, at: sink.scoped('svc-cm', ['idp.config', 'connectors', 0, 'config']) }, types);
        expect(factory, type).to.equal(undefined);
        expect(sink.problems.map(formatProblem), type).to.include(`${AT}.redirectURI: must not be set: svc gives the connector <url>/api/idp/callback (with the url of svc-cm) as its callback; register that URL upstream`);
      }
    });

    it('resolves the secret references of an ldap config, naming one that does not resolve', () => {
      const sink = new ProblemSink();
      const at = sink.scoped('svc-cm', ['idp.config', 'connectors', 0, 'config']);
      const ldapConfig = { host: 'ldap.example.com', bindDN: 'cn=svc', userSearch: { baseDN: 'ou=people', username: 'uid', idAttr: 'uid' } };
      expect(parseConnectorConfig('ldap', { raw: { ...ldapConfig, bindPW: '$dex.clientSecret' }, secrets: SECRETS, at })).to.be.a('function');
      expect(parseConnectorConfig('ldap', { raw: { ...ldapConfig, bindPW: '$ldap.bindPW' }, secrets: SECRETS, at })).to.equal(undefined);
      expect(sink.problems.map(formatProblem)).to.deep.equal([`${AT}.bindPW: references key 'ldap.bindPW' of Secret 'svc-secret', which has no such key`]);
    });

    it('refuses a config that is not a map, and throws on a type it does not know', () => {
      const sink = new ProblemSink();
      expect(parseConnectorConfig('oidc', { raw: ['x'], secrets: SECRETS, at: sink.scoped('svc-cm', ['idp.config', 'connectors', 0, 'config']) })).to.equal(undefined);
      expect(sink.problems.map(formatProblem)).to.deep.equal([`${AT}: must be a map`]);
      expect(() => parseConnectorConfig('kerberos', { raw: {}, secrets: SECRETS, at: sink.scoped('svc-cm') })).to.throw("unknown connector type 'kerberos'");
    });

    it('builds a connector of every type, each one that starts a login in the browser sending it upstream', async () => {
      const { idp, problems } = idpConfig(
        `connectors:
  - { type: ldap, id: corp, name: Corp, config: { host: "ldap.example.com:636", userSearch: { baseDN: "ou=people", username: uid, idAttr: uid } } }
  - { type: saml, id: saml, name: SAML, config: { ssoURL: "https://idp.example.com/sso", ca: "$corp-idp:ca.crt", usernameAttr: name, emailAttr: email } }
  - { type: github, id: github, name: GitHub, config: { clientID: a, clientSecret: $dex.clientSecret } }
  - { type: gitlab, id: gitlab, name: GitLab, config: { clientID: a, clientSecret: b } }
  - { type: oidc, id: oidc, name: OIDC, config: { issuer: "https://accounts.example.com", clientID: a, clientSecret: b } }
  - { type: microsoft, id: entra, name: Entra, config: { tenant: contoso.onmicrosoft.com, clientID: a, clientSecret: b } }
  - { type: google, id: google, name: Google, config: { clientID: a, clientSecret: b, hostedDomains: [example.com] } }
`,
        [],
      );
      expect(problems).to.deep.equal([]);
      const { registry } = testRegistry();
      await registry.update(idp?.connectors ?? []);
      expect(registry.list().map((live) => `${live.type}:${live.connector.kind}`)).to.deep.equal(['ldap:password', 'saml:browser', 'github:browser', 'gitlab:browser', 'oidc:browser', 'microsoft:browser', 'google:browser']);
      const ctx = { callbackUrl: 'https://svc.example.com/api/idp/callback', wantGroups: false, signal: AbortSignal.timeout(1000) };
      // The oidc, microsoft and google connectors discover their provider first, which needs a network: their own tests run them against a provider.
      for (const { type, connector } of registry.list().filter((live) => !['ldap', 'oidc', 'microsoft', 'google'].includes(live.type))) {
        if (connector.kind !== 'browser') throw new Error(`${type} is not a browser connector`);
        const start = await connector.begin('state-1', ctx);
        expect(start.via, type).to.equal('redirect');
        if (start.via === 'redirect') expect(new URL(start.url).protocol, type).to.equal('https:');
      }
    });
  });

  describe('idp.config', () => {
    it('names an unknown type and a missing config, and keeps the other connectors', () => {
      const { idp, problems } = idpConfig(
        `connectors:
  - { type: kerberos, id: k, name: K, config: {} }
  - { type: fake, id: none, name: None }
  - { type: fake, id: ok, name: OK, config: { value: v } }
`,
        [],
      );
      expect(problems).to.deep.equal([
        'svc-cm: idp.config: connectors[0].type: \'kerberos\' is not a connector type: one of fake, ldap, saml, github, gitlab, oidc, microsoft, google',
        'svc-cm: idp.config: connectors[1].config: required',
      ]);
      expect(idp?.connectors.map((c) => c.id)).to.deep.equal(['ok']);
    });

    it('reports the entry and its config in one run', () => {
      const { problems } = idpConfig('connectors:\n  - { type: saml, id: Bad_Id, name: "", config: { ssoURL: "nope", redirectURI: "https://x/cb", ca: "$corp-idp:ca.crt", usernameAttr: n, emailAttr: e } }\n', []);
      expect(problems).to.have.members([
        'svc-cm: idp.config: connectors[0].id: \'Bad_Id\': lower-case letters, digits, "-" and "_" only',
        'svc-cm: idp.config: connectors[0].name: must not be empty',
        'svc-cm: idp.config: connectors[0].config.redirectURI: must not be set: svc gives the connector <url>/api/idp/callback (with the url of svc-cm) as its callback; register that URL upstream',
        'svc-cm: idp.config: connectors[0].config.ssoURL: \'nope\' is not an http(s) URL',
      ]);
    });

    it('keeps the last good entry of an id whose config breaks, and uses the first of two entries with one id', () => {
      const events: string[] = [];
      const first = idpConfig(entries(['a', 'one'], ['b', 'one']), events).idp;
      const { idp, problems } = idpConfig('connectors:\n  - { type: fake, id: a, name: A, config: { value: 7 } }\n  - { type: fake, id: b, name: B2, config: { value: two } }\n  - { type: fake, id: b, name: B3, config: { value: three } }\n', events, first);
      expect(problems).to.deep.equal([
        'svc-cm: idp.config: connectors[0].config.value: 7 must be a string, not a number',
        "svc-cm: idp.config: connectors[2].id: 'b' is used twice; the first one is used",
      ]);
      expect(idp?.connectors[0]).to.equal(first?.connectors[0]);
      expect(idp?.connectors.map((c) => c.name)).to.deep.equal(['A', 'B2']);
    });
  });

  describe('live connectors', () => {
    it('builds every entry with its own deps, in the order of idp.config', async () => {
      const events: string[] = [];
      const { registry, asked, prompts, lines } = testRegistry();
      await registry.update(idpConfig(entries(['b', 'x'], ['a', 'y']), events).idp?.connectors ?? []);
      expect(prompts()).to.deep.equal(['b=x#1', 'a=y#2']);
      expect(asked).to.deep.equal(['b', 'a']);
      expect(registry.get('a')?.name).to.equal('A');
      expect(registry.get('c')).to.equal(undefined);
      expect(lines.join('')).to.include('"connector":"b"');
    });

    it('rebuilds on a change, closing the connectors it replaces or drops', async () => {
      const events: string[] = [];
      const { registry, prompts } = testRegistry();
      await registry.update(idpConfig(entries(['a', 'x'], ['b', 'y']), events).idp?.connectors ?? []);
      await registry.update(idpConfig(entries(['a', 'x2']), events).idp?.connectors ?? []);
      expect(prompts()).to.deep.equal(['a=x2#3']);
      expect(events).to.deep.equal(['open x#1', 'open y#2', 'open x2#3', 'close x#1', 'close y#2']);
    });

    it('does not rebuild an entry it already built (a last good one kept by parsing)', async () => {
      const events: string[] = [];
      const { registry, prompts } = testRegistry();
      const first = idpConfig(entries(['a', 'x'], ['b', 'y']), events).idp;
      await registry.update(first?.connectors ?? []);
      const broken = idpConfig('connectors:\n  - { type: fake, id: a, name: A, config: { value: [] } }\n  - { type: fake, id: b, name: B, config: { value: y2 } }\n', events, first);
      await registry.update(broken.idp?.connectors ?? []);
      expect(prompts()).to.deep.equal(['a=x#1', 'b=y2#3']);
      expect(events).to.deep.equal(['open x#1', 'open y#2', 'open y2#3', 'close y#2']);
    });

    it('keeps the last good connector of an id whose build fails, and leaves out a new one that fails', async () => {
      const events: string[] = [];
      const { registry, prompts, lines } = testRegistry();
      await registry.update(idpConfig(entries(['a', 'x']), events).idp?.connectors ?? []);
      const failing = idpConfig('connectors:\n  - { type: fake, id: a, name: A, config: { value: x2, failOpen: true } }\n  - { type: fake, id: n, name: N, config: { value: n, failOpen: true } }\n', events);
      expect(failing.problems).to.deep.equal([]);
      await registry.update(failing.idp?.connectors ?? []);
      expect(prompts()).to.deep.equal(['a=x#1']);
      expect(events).to.deep.equal(['open x#1']);
      expect(lines.join('')).to.include('connector a could not be built; the previous one stays in force');
      expect(lines.join('')).to.include('connector n could not be built; it is left out');
    });

    it('logs a connector that fails to close and goes on', async () => {
      const events: string[] = [];
      const { registry, prompts, lines } = testRegistry();
      await registry.update(idpConfig(entries(['a', 'stuck'], ['b', 'y']), events).idp?.connectors ?? []);
      await registry.update(idpConfig(entries(['b', 'y2']), events).idp?.connectors ?? []);
      expect(prompts()).to.deep.equal(['b=y2#3']);
      expect(events).to.include.members(['close stuck#1', 'close y#2']);
      expect(lines.join('')).to.include('connector a did not close cleanly');
    });

    it('closes every connector on close() and takes no update after it', async () => {
      const events: string[] = [];
      const { registry } = testRegistry();
      const parsed: readonly ParsedConnector[] = idpConfig(entries(['a', 'x'], ['b', 'y']), events).idp?.connectors ?? [];
      await registry.update(parsed);
      await registry.close();
      expect(registry.list()).to.deep.equal([]);
      expect(events).to.deep.equal(['open x#1', 'open y#2', 'close x#1', 'close y#2']);
      const err: unknown = await registry.update(parsed).then(() => undefined, (e: unknown) => e);
      expect(String(err)).to.include('the connector registry is closed');
    });

    it('builds from entries as given, whatever parsed them', async () => {
      const { registry } = testRegistry();
      const connector: Connector = { kind: 'password', prompt: 'Email', login: () => Promise.resolve(null) };
      await registry.update([{ type: 'fake', id: 'direct', name: 'Direct', open: () => connector }]);
      expect(registry.get('direct')?.connector).to.equal(connector);
    });
  });
});
