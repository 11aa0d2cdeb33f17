/**
 * The LDAP connector's configuration: Dex's keys, defaults, every problem named by its key
 * path, secret references, and a parse path that never loads the LDAP library.
 * fixtures/config-ca.pem is a self-signed certificate whose key was thrown away (only its
 * parsing matters here).
 */
import { expect } from 'chai';
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PART_OF_LABEL, PART_OF_VALUE, type SecretObject } from '../../../src/config/manifests.js';
import { ProblemSink, formatProblem } from '../../../src/config/problems.js';
import { DEFAULT_PLAIN_PORT, DEFAULT_TLS_PORT, parseLdapConfig, type LdapConfig } from '../../../connectors/ldap/config.js';
import { ldap } from '../../../connectors/ldap/index.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const CA_PEM = readFileSync(join(HERE, 'fixtures', 'config-ca.pem'), 'utf8');
const PREFIX = 'svc-cm: idp.config: connectors[0].config';

const minimal = { host: 'ldap.example.org', userSearch: { baseDN: 'ou=people,dc=example,dc=org', username: 'uid', idAttr: 'uid' } };

function check(raw: unknown): { config: LdapConfig | undefined; problems: string[] } {
  const sink = new ProblemSink();
  const config = parseLdapConfig(raw, sink.scoped('svc-cm', ['idp.config', 'connectors', 0, 'config']));
  return { config, problems: sink.problems.map(formatProblem) };
}

function viaType(raw: unknown, secrets: ReadonlyMap<string, SecretObject> = new Map()): { ok: boolean; problems: string[] } {
  const sink = new ProblemSink();
  const factory = ldap.parse({ raw, secrets, at: sink.scoped('svc-cm', ['idp.config', 'connectors', 0, 'config']) });
  return { ok: factory !== undefined, problems: sink.problems.map(formatProblem) };
}

function problemsOf(raw: unknown): string[] {
  const { config, problems } = check(raw);
  expect(config, 'no config when anything is wrong').to.equal(undefined);
  return problems;
}

describe('ldap connector config', () => {
  it('applies Dex defaults: ldaps on 636, sub scope, "Username", anonymous bind, no groups', () => {
    const { config, problems } = check(minimal);
    expect(problems).to.deep.equal([]);
    expect(config).to.deep.equal({
      host: 'ldap.example.org',
      port: DEFAULT_TLS_PORT,
      transport: 'ldaps',
      insecureSkipVerify: false,
      rootCAs: [],
      clientCert: undefined,
      clientKey: undefined,
      bind: undefined,
      usernamePrompt: 'Username',
      userSearch: {
        baseDN: 'ou=people,dc=example,dc=org', filter: undefined, username: 'uid', scope: 'sub', idAttr: 'uid',
        emailAttr: undefined, nameAttr: undefined, preferredUsernameAttr: undefined, emailSuffix: undefined,
      },
      groupSearch: undefined,
      legacyGroupMatcher: false,
    });
  });

  it('uses 389 for insecureNoSSL and for startTLS, and keeps an explicit port', () => {
    expect(check({ ...minimal, insecureNoSSL: true }).config).to.include({ port: DEFAULT_PLAIN_PORT, transport: 'plain' });
    expect(check({ ...minimal, startTLS: true }).config).to.include({ port: DEFAULT_PLAIN_PORT, transport: 'startTLS' });
    expect(check({ ...minimal, host: 'ldap.example.org:1636' }).config).to.include({ host: 'ldap.example.org', port: 1636 });
    expect(check({ ...minimal, host: '[2001:db8::1]:3269' }).config).to.include({ host: '2001:db8::1', port: 3269 });
    expect(check({ ...minimal, host: '[2001:db8::1]' }).config).to.include({ host: '2001:db8::1', port: 636 });
  });

  it('reads every key: service account, prompt, searches, matchers', () => {
    const { config, problems } = check({
      ...minimal,
      bindDN: 'cn=reader,dc=example,dc=org',
      bindPW: 'readerpw',
      usernamePrompt: 'Email',
      insecureSkipVerify: true,
      userSearch: { ...minimal.userSearch, filter: '(objectClass=person)', scope: 'one', emailAttr: 'mail', nameAttr: 'cn', preferredUsernameAttr: 'uid', emailSuffix: 'example.org' },
      groupSearch: {
        baseDN: 'ou=groups,dc=example,dc=org', filter: '(objectClass=groupOfNames)', scope: 'one', nameAttr: 'cn',
        userMatchers: [{ userAttr: 'DN', groupAttr: 'member', recursionGroupAttr: 'member' }, { userAttr: 'uid', groupAttr: 'memberUid' }],
      },
    });
    expect(problems).to.deep.equal([]);
    expect(config?.bind).to.deep.equal({ dn: 'cn=reader,dc=example,dc=org', password: 'readerpw' });
    expect(config?.usernamePrompt).to.equal('Email');
    expect(config?.insecureSkipVerify).to.equal(true);
    expect(config?.userSearch).to.include({ filter: '(objectClass=person)', scope: 'one', emailAttr: 'mail', nameAttr: 'cn', preferredUsernameAttr: 'uid', emailSuffix: 'example.org' });
    expect(config?.groupSearch).to.deep.equal({
      baseDN: 'ou=groups,dc=example,dc=org', filter: '(objectClass=groupOfNames)', scope: 'one', nameAttr: 'cn',
      userMatchers: [{ userAttr: 'DN', groupAttr: 'member', recursionGroupAttr: 'member' }, { userAttr: 'uid', groupAttr: 'memberUid', recursionGroupAttr: undefined }],
    });
  });

  it('reads the legacy groupSearch.userAttr/groupAttr pair as one matcher, flagged for a warning', () => {
    const { config } = check({ ...minimal, groupSearch: { baseDN: 'ou=groups,dc=example,dc=org', userAttr: 'DN', groupAttr: 'member', recursionGroupAttr: 'member', nameAttr: 'cn' } });
    expect(config?.groupSearch?.userMatchers).to.deep.equal([{ userAttr: 'DN', groupAttr: 'member', recursionGroupAttr: 'member' }]);
    expect(config?.legacyGroupMatcher).to.equal(true);
  });

  it('a groupSearch without baseDN means no groups (Dex)', () => {
    expect(check({ ...minimal, groupSearch: { nameAttr: 'cn' } }).config?.groupSearch).to.equal(undefined);
  });

  it('names every unknown key by its path, nested ones included', () => {
    expect(problemsOf({
      ...minimal, hostname: 'x', kerberos: {},
      userSearch: { ...minimal.userSearch, usernameAttr: 'uid' },
      groupSearch: { baseDN: 'ou=groups', nameAttr: 'cn', userMatchers: [{ userAttr: 'DN', groupAttr: 'member', nested: true }] },
    })).to.have.members([
      `${PREFIX}.hostname: unknown key`,
      `${PREFIX}.kerberos: unknown key`,
      `${PREFIX}.userSearch.usernameAttr: unknown key`,
      `${PREFIX}.groupSearch.userMatchers[0].nested: unknown key`,
    ]);
  });

  it('refuses redirectURI: LDAP has no callback', () => {
    expect(problemsOf({ ...minimal, redirectURI: 'https://svc.example.org/api/idp/callback' })).to.deep.equal([
      `${PREFIX}.redirectURI: must not be set: LDAP logs in through svc's own form, there is no callback`,
    ]);
  });

  it('names each missing required key and each wrong type, all at once', () => {
    const problems = problemsOf({ insecureNoSSL: 'yes', userSearch: { scope: 'base' } });
    expect(problems).to.have.length(6);
    expect(problems).to.include(`${PREFIX}.host: required`);
    expect(problems).to.include(`${PREFIX}.insecureNoSSL: 'yes' must be true or false, not a string`);
    expect(problems).to.include(`${PREFIX}.userSearch.baseDN: required`);
    expect(problems).to.include(`${PREFIX}.userSearch.username: required`);
    expect(problems).to.include(`${PREFIX}.userSearch.idAttr: required`);
    expect(problems).to.include(`${PREFIX}.userSearch.scope: 'base' must be one of 'sub', 'one'`);
    expect(problemsOf({ host: 'x' })).to.deep.equal([`${PREFIX}.userSearch: required`]);
    expect(problemsOf({ ...minimal, host: '' })).to.deep.equal([`${PREFIX}.host: must not be empty`]);
  });

  it('refuses a host with a scheme, a path or a bad port', () => {
    expect(problemsOf({ ...minimal, host: 'ldaps://ldap.example.org' })).to.deep.equal([
      `${PREFIX}.host: 'ldaps://ldap.example.org' has a scheme: write host[:port] ('ldap.example.org'); TLS (ldaps) is the default`,
    ]);
    expect(problemsOf({ ...minimal, host: 'ldap.example.org/dc=x' })).to.deep.equal([
      `${PREFIX}.host: 'ldap.example.org/dc=x' must be host[:port] (an IPv6 address in brackets), without a path or spaces`,
    ]);
    expect(problemsOf({ ...minimal, host: 'ldap://ldap.example.org:389' })).to.deep.equal([
      `${PREFIX}.host: 'ldap://ldap.example.org:389' has a scheme: write host[:port] ('ldap.example.org:389'); for plain LDAP set insecureNoSSL: true, or startTLS: true to upgrade it`,
    ]);
    expect(problemsOf({ ...minimal, host: '2001:db8::1' })).to.have.length(1);
    expect(problemsOf({ ...minimal, host: 'ldap.example.org:99999' })).to.deep.equal([`${PREFIX}.host: has a port outside 1-65535`]);
    expect(problemsOf({ ...minimal, host: 'ldap.example.org:0' })).to.deep.equal([`${PREFIX}.host: has a port outside 1-65535`]);
  });

  it('refuses insecureNoSSL with startTLS or with any TLS setting', () => {
    expect(problemsOf({ ...minimal, insecureNoSSL: true, startTLS: true, insecureSkipVerify: true, rootCA: CA_PEM })).to.deep.equal([
      `${PREFIX}.startTLS: cannot be used with insecureNoSSL: choose plain LDAP or StartTLS`,
      `${PREFIX}.insecureSkipVerify: has no effect with insecureNoSSL, which uses no TLS`,
      `${PREFIX}.rootCA: has no effect with insecureNoSSL, which uses no TLS`,
    ]);
  });

  it('wants bindDN and bindPW together', () => {
    expect(problemsOf({ ...minimal, bindDN: 'cn=reader,dc=example,dc=org' })).to.deep.equal([
      `${PREFIX}.bindPW: is required with bindDN (leave both out for an anonymous bind)`,
    ]);
    expect(problemsOf({ ...minimal, bindPW: 'readerpw' })).to.deep.equal([
      `${PREFIX}.bindDN: is required with bindPW (leave both out for an anonymous bind)`,
    ]);
  });

  it('takes rootCA as PEM text and rootCAData as base64 PEM, never a file path, not both', () => {
    expect(check({ ...minimal, rootCA: CA_PEM }).config?.rootCAs).to.deep.equal([CA_PEM]);
    expect(check({ ...minimal, rootCAData: Buffer.from(CA_PEM).toString('base64') }).config?.rootCAs).to.deep.equal([CA_PEM]);
    expect(problemsOf({ ...minimal, rootCA: '/etc/ssl/certs/ldap-ca.pem' })).to.deep.equal([
      `${PREFIX}.rootCA: must hold PEM certificates ("-----BEGIN CERTIFICATE-----") (svc reads no files: put the certificate itself here, or a secret reference to it)`,
    ]);
    expect(problemsOf({ ...minimal, rootCA: '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----' })).to.deep.equal([
      `${PREFIX}.rootCA: certificate 1 of rootCA cannot be read`,
    ]);
    expect(problemsOf({ ...minimal, rootCAData: 'not base64!' })).to.deep.equal([
      `${PREFIX}.rootCAData: is not base64 (it holds the PEM text, base64-encoded)`,
    ]);
    expect(problemsOf({ ...minimal, rootCA: CA_PEM, rootCAData: Buffer.from(CA_PEM).toString('base64') })).to.deep.equal([
      `${PREFIX}.rootCAData: cannot be used with rootCA: give the CA once`,
    ]);
  });

  it('takes clientCert and clientKey together, as PEM, never echoing the key', () => {
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const key = privateKey.export({ format: 'pem', type: 'pkcs8' }).toString();
    const { config } = check({ ...minimal, clientCert: CA_PEM, clientKey: key });
    expect(config).to.include({ clientCert: CA_PEM, clientKey: key });
    expect(problemsOf({ ...minimal, clientCert: CA_PEM })).to.deep.equal([`${PREFIX}.clientKey: is required with clientCert`]);
    expect(problemsOf({ ...minimal, clientKey: key })).to.deep.equal([`${PREFIX}.clientCert: is required with clientKey`]);
    const bad = problemsOf({ ...minimal, clientCert: CA_PEM, clientKey: 'hunter2-private' });
    expect(bad).to.deep.equal([`${PREFIX}.clientKey: is not a PEM private key (or is encrypted)`]);
  });

  it('checks that filters are one parenthesised expression', () => {
    expect(problemsOf({ ...minimal, userSearch: { ...minimal.userSearch, filter: 'objectClass=person' } })).to.deep.equal([
      `${PREFIX}.userSearch.filter: must be one LDAP filter in parentheses, e.g. (objectClass=person)`,
    ]);
    expect(problemsOf({ ...minimal, userSearch: { ...minimal.userSearch, filter: '(objectClass=person))(' } })).to.have.length(1);
    expect(problemsOf({ ...minimal, userSearch: { ...minimal.userSearch, filter: '(a=1)(b=2)' } })).to.have.length(1);
    expect(check({ ...minimal, userSearch: { ...minimal.userSearch, filter: '(&(objectClass=person)(cn=a\\29b))' } }).problems).to.deep.equal([]);
  });

  it('checks the group search: nameAttr and matchers with baseDN, the legacy pair whole and alone', () => {
    const base = 'ou=groups,dc=example,dc=org';
    expect(problemsOf({ ...minimal, groupSearch: { baseDN: base } })).to.deep.equal([
      `${PREFIX}.groupSearch.nameAttr: is required with baseDN: the group attribute that names a group (e.g. cn)`,
      `${PREFIX}.groupSearch.userMatchers: is required with baseDN: how a group names its members (e.g. {userAttr: DN, groupAttr: member})`,
    ]);
    expect(problemsOf({ ...minimal, groupSearch: { baseDN: base, nameAttr: 'cn', userAttr: 'DN' } })).to.deep.equal([
      `${PREFIX}.groupSearch.groupAttr: is required with its pair (userAttr and groupAttr); better, use userMatchers`,
    ]);
    expect(problemsOf({ ...minimal, groupSearch: { baseDN: base, nameAttr: 'cn', userAttr: 'DN', groupAttr: 'member', userMatchers: [{ userAttr: 'uid', groupAttr: 'memberUid' }] } })).to.deep.equal([
      `${PREFIX}.groupSearch.userMatchers: cannot be used with the older userAttr/groupAttr pair: move that pair into userMatchers`,
    ]);
    expect(problemsOf({ ...minimal, groupSearch: { baseDN: base, nameAttr: 'cn', recursionGroupAttr: 'member', userMatchers: [{ userAttr: 'DN', groupAttr: 'member' }] } })).to.deep.equal([
      `${PREFIX}.groupSearch.recursionGroupAttr: belongs to a matcher: put it in userMatchers`,
    ]);
    expect(problemsOf({ ...minimal, groupSearch: { baseDN: base, nameAttr: 'cn', userMatchers: [{ userAttr: '', groupAttr: 'member' }] } })).to.deep.equal([
      `${PREFIX}.groupSearch.userMatchers[0].userAttr: must not be empty`,
    ]);
  });

  describe('through the connector type', () => {
    const secret = (name: string, data: Record<string, string>, labelled = true): SecretObject => ({
      name, file: `${name}.yaml`, labels: labelled ? { [PART_OF_LABEL]: PART_OF_VALUE } : {}, data,
    });

    it('resolves secret references (bindPW, rootCA) before checking', () => {
      const secrets = new Map([['ldap', secret('ldap', { bindPW: 'readerpw', ca: CA_PEM })]]);
      const result = viaType({ ...minimal, bindDN: 'cn=reader,dc=example,dc=org', bindPW: '$ldap:bindPW', rootCA: '$ldap:ca' }, secrets);
      expect(result).to.deep.equal({ ok: true, problems: [] });
    });

    it('names a reference that cannot be resolved, never its value', () => {
      const secrets = new Map([['other', secret('other', { bindPW: 'x' }, false)]]);
      const missing = viaType({ ...minimal, bindDN: 'cn=reader,dc=example,dc=org', bindPW: '$ldap:bindPW' }, secrets);
      expect(missing.ok).to.equal(false);
      expect(missing.problems).to.deep.equal([`${PREFIX}.bindPW: references Secret 'ldap', which does not exist`]);
      const unlabelled = viaType({ ...minimal, bindDN: 'cn=reader,dc=example,dc=org', bindPW: '$other:bindPW' }, secrets);
      expect(unlabelled.problems).to.deep.equal([`${PREFIX}.bindPW: references secret 'other', which lacks the label ${PART_OF_LABEL}: ${PART_OF_VALUE}`]);
    });

    it('reports redirectURI and every other problem, and returns no factory', () => {
      const result = viaType({ ...minimal, redirectURI: 'https://x/cb', port: 636 });
      expect(result.ok).to.equal(false);
      expect(result.problems).to.have.members([
        `${PREFIX}.redirectURI: must not be set: LDAP logs in through svc's own form, there is no callback`,
        `${PREFIX}.port: unknown key`,
      ]);
    });

    it('returns a password connector with the prompt, without connecting', () => {
      const sink = new ProblemSink();
      const factory = ldap.parse({ raw: { ...minimal, usernamePrompt: 'Email' }, secrets: new Map(), at: sink.scoped('svc-cm') });
      const warnings: string[] = [];
      const log = { warn: (msg: string) => warnings.push(msg) } as unknown as Parameters<NonNullable<typeof factory>>[0]['log'];
      const connector = factory?.({ upstreamFetch: () => globalThis.fetch, now: () => new Date(), log });
      expect(connector).to.include({ kind: 'password', prompt: 'Email' });
      expect(warnings).to.deep.equal([]);
    });
  });

  it('warns once at start about each insecure switch and the older group matcher', () => {
    const sink = new ProblemSink();
    const raw = { ...minimal, insecureNoSSL: true, groupSearch: { baseDN: 'ou=groups', nameAttr: 'cn', userAttr: 'uid', groupAttr: 'memberUid' } };
    const factory = ldap.parse({ raw, secrets: new Map(), at: sink.scoped('svc-cm') });
    const warnings: string[] = [];
    const log = { warn: (msg: string) => warnings.push(msg) } as unknown as Parameters<NonNullable<typeof factory>>[0]['log'];
    factory?.({ upstreamFetch: () => globalThis.fetch, now: () => new Date(), log });
    expect(warnings).to.deep.equal([
      'ldap: insecureNoSSL: passwords cross the network in clear text',
      'ldap: groupSearch.userAttr/groupAttr are deprecated (as in Dex): use groupSearch.userMatchers',
    ]);
  });

  it('the parse path never loads ldapts: index, config and what they import statically', () => {
    const root = resolve(HERE, '../../../connectors/ldap');
    const seen = new Set<string>();
    const visit = (file: string): void => {
      if (seen.has(file)) return;
      seen.add(file);
      const source = readFileSync(file, 'utf8');
      // Static value imports only: `import type` is erased, `import('./x.js')` is loaded on use.
      for (const [, what, from] of source.matchAll(/^import\s+(type\s+)?[^'"]*?from\s+'([^']+)'/gm) as IterableIterator<string[]>) {
        if (what !== undefined || from === undefined) continue;
        expect(from, `${file} imports ${from}`).to.not.match(/^ldapts/);
        if (from.startsWith('./')) visit(join(dirname(file), from.replace(/\.js$/, '.ts')));
      }
    };
    visit(join(root, 'index.ts'));
    expect([...seen].map((f) => f.slice(root.length + 1)).sort()).to.deep.equal(['config.ts', 'index.ts', 'lazy.ts']);
  });
});
