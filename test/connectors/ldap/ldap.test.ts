/**
 * The LDAP connector against a real slapd (scripts/peers/start-slapd.sh, started once for the
 * file) holding fixtures/ldap/ldap-connector.ldif and serving a certificate for
 * IP:127.0.0.1 only, signed by a test CA made by scripts/peers/make-test-ca.sh. Connecting by
 * `localhost` is therefore a name the certificate does not carry.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Attribute, Change, Client } from 'ldapts';
import { pino } from 'pino';
import type { Connector, Identity, LoginContext, PasswordConnector } from '../../../connectors/connector.js';
import { UpstreamMisconfigured, UpstreamUnavailable } from '../../../connectors/errors.js';
import { parseLdapConfig } from '../../../connectors/ldap/config.js';
import { ldap } from '../../../connectors/ldap/index.js';
import { LdapConnector } from '../../../connectors/ldap/ldap.js';
import { ProblemSink, formatProblem } from '../../../src/config/problems.js';
import { asDirectoryAdmin } from './directory-admin.js';
import { writesTo } from './socket-writes.js';
import { freePort, startPeer, type Peer } from '../../helpers/peers.js';
import { silentServer } from '../../helpers/silent-server.js';

const PEERS = fileURLToPath(new URL('../../../scripts/peers/', import.meta.url));
const ROOT_FIXTURES = fileURLToPath(new URL('../../../fixtures/', import.meta.url));
const UNREACHABLE = 'the directory is unreachable; try again later';
const MISCONFIGURED = 'the directory could not complete the login; the server log says why';
const QUICK = { connectMs: 500, operationMs: 500, sessionMs: 1_500 };

let peer: Peer;
let tlsDir: string;
let caPem: string;
let ldapPort: number;
let ldapsPort: number;

interface LogLine { level: number; msg: string; [key: string]: unknown }

function capture(): { lines: LogLine[]; log: pino.Logger } {
  const lines: LogLine[] = [];
  const log = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line) as LogLine) });
  return { lines, log };
}

function baseConfig(): Record<string, unknown> {
  return {
    host: `127.0.0.1:${ldapPort}`,
    insecureNoSSL: true,
    bindDN: 'cn=reader,dc=example,dc=org',
    bindPW: 'readerpw',
    userSearch: {
      baseDN: 'ou=people,dc=example,dc=org', filter: '(objectClass=inetOrgPerson)', username: 'uid',
      idAttr: 'uid', emailAttr: 'mail', nameAttr: 'cn', preferredUsernameAttr: 'uid',
    },
    groupSearch: {
      baseDN: 'ou=groups,dc=example,dc=org', nameAttr: 'cn',
      userMatchers: [{ userAttr: 'DN', groupAttr: 'member' }, { userAttr: 'uid', groupAttr: 'memberUid' }],
    },
  };
}

/** Through the connector type, as the registry builds it (parse, factory, lazy load). */
function connectorFor(raw: Record<string, unknown>): { connector: PasswordConnector; lines: LogLine[] } {
  const sink = new ProblemSink();
  const factory = ldap.parse({ raw, secrets: new Map(), at: sink.scoped('svc-cm', ['idp.config', 'connectors', 0, 'config']) });
  expect(sink.problems.map(formatProblem)).to.deep.equal([]);
  const { lines, log } = capture();
  const connector: Connector | undefined = factory?.({ upstreamFetch: () => globalThis.fetch, now: () => new Date(), log });
  if (connector?.kind !== 'password') throw new Error('not a password connector');
  return { connector, lines };
}

/** Built directly, to shorten the timeouts. */
function quickConnector(raw: Record<string, unknown>): { connector: LdapConnector; lines: LogLine[] } {
  const sink = new ProblemSink();
  const config = parseLdapConfig(raw, sink.scoped('svc-cm'));
  if (config === undefined) throw new Error(sink.problems.map(formatProblem).join('\n'));
  const { lines, log } = capture();
  return { connector: new LdapConnector(config, { upstreamFetch: () => globalThis.fetch, now: () => new Date(), log }, { timeouts: QUICK }), lines };
}

function ctx(wantGroups = true): LoginContext {
  return { callbackUrl: 'https://svc.example.org/api/idp/callback', wantGroups, signal: new AbortController().signal };
}

async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (err: unknown) {
    if (err instanceof Error) return err;
    throw new Error(`rejected with a non-error: ${String(err)}`, { cause: err });
  }
  throw new Error('expected a rejection');
}

/**
 * By name and code, not instanceof: mocha loads test files through require (tsx turns them into
 * CommonJS), while the connector's lazy import() loads ESM, so the error classes the test sees
 * are other instances of the same module.
 */
function expectUpstream(err: Error, type: typeof UpstreamUnavailable | typeof UpstreamMisconfigured, message: string): void {
  expect(err.name).to.equal(type.name);
  expect((err as { code?: unknown }).code).to.equal('unavailable');
  expect(err.message).to.equal(message);
}

/** Every bind slapd has seen, oldest first: the DNs of its accesslog (ACCESSLOG=1). */
async function binds(): Promise<string[]> {
  const client = new Client({ url: `ldap://127.0.0.1:${ldapPort}` });
  try {
    await client.bind('cn=admin,cn=accesslog', 'adminpw');
    const { searchEntries } = await client.search('cn=accesslog', { filter: '(objectClass=auditBind)', attributes: ['reqStart', 'reqDN'] });
    return searchEntries.sort((a, b) => String(a['reqStart']).localeCompare(String(b['reqStart']))).map((e) => String(e['reqDN']));
  } finally {
    await client.unbind();
  }
}

const asAdmin = <T>(work: (client: Client) => Promise<T>): Promise<T> => asDirectoryAdmin(ldapPort, work);

/** The connector closed its side: the server sees every socket close, soon. */
async function expectAllClosed(server: { open: () => number }): Promise<void> {
  for (let i = 0; i < 50 && server.open() > 0; i++) await new Promise((r) => setTimeout(r, 20));
  expect(server.open(), 'sockets still open').to.equal(0);
}

function errorsIn(lines: readonly LogLine[]): string[] {
  return lines.filter((l) => l.level >= 50).map((l) => l.msg);
}

/**
 * The operator's reason the error carries (the caller logs the attempt with it, once); the
 * connector itself logs nothing above debug for it.
 */
function reasonOf(err: Error, lines: readonly LogLine[]): string {
  expect(lines.filter((l) => l.level > 20 && !/^ldap: (insecure|groupSearch)/.test(l.msg)).map((l) => l.msg)).to.deep.equal([]);
  return String((err as { reason?: unknown }).reason);
}

describe('ldap connector against slapd', function () {
  this.timeout(20_000);

  before(async function () {
    this.timeout(60_000);
    tlsDir = await mkdtemp(join(tmpdir(), 'svc-ldap-tls-'));
    await promisify(execFile)('bash', [join(PEERS, 'make-test-ca.sh'), tlsDir, 'IP:127.0.0.1']);
    caPem = await readFile(join(tlsDir, 'ca.pem'), 'utf8');
    ldapPort = await freePort();
    ldapsPort = await freePort();
    peer = await startPeer('start-slapd.sh', [String(ldapPort), String(ldapsPort)], {
      USERS_LDIF: join(ROOT_FIXTURES, 'ldap', 'ldap-connector.ldif'),
      TLS_FILES: tlsDir,
      ACCESSLOG: '1',
    });
  });

  after(async () => {
    await peer?.stop();
    if (tlsDir !== undefined) await rm(tlsDir, { recursive: true, force: true });
  });

  describe('login', () => {
    it('signs alice in with groups by member DN and by memberUid', async () => {
      const { connector, lines } = connectorFor(baseConfig());
      const identity = await connector.login('alice', 'alice123', ctx());
      expect(identity).to.deep.include({
        userId: 'alice', username: 'Alice Liddell', preferredUsername: 'alice', email: 'alice@example.org', emailVerified: true,
      });
      expect(identity?.groups).to.have.members(['admins', 'devs', 'ops']);
      expect(JSON.parse(identity?.connectorData ?? '')).to.deep.equal({ username: 'alice', dn: 'uid=alice,ou=people,dc=example,dc=org' });
      expect(errorsIn(lines)).to.deep.equal([]);
      expect(connector.prompt).to.equal('Username');
    });

    it('reads bob\'s groups (devs by DN, qa by uid) and none when the client did not ask', async () => {
      const { connector } = connectorFor(baseConfig());
      expect((await connector.login('bob', 'bob123', ctx()))?.groups).to.have.members(['devs', 'qa']);
      expect((await connector.login('bob', 'bob123', ctx(false)))?.groups).to.deep.equal([]);
    });

    it('follows nested groups with recursionGroupAttr, ending the devs/engineering cycle', async () => {
      const config = baseConfig();
      const groupSearch = { ...(config['groupSearch'] as object), userMatchers: [{ userAttr: 'DN', groupAttr: 'member', recursionGroupAttr: 'member' }] };
      const { connector } = connectorFor({ ...config, groupSearch });
      expect((await connector.login('bob', 'bob123', ctx()))?.groups).to.deep.equal(['devs', 'engineering']);
      expect((await connector.login('alice', 'alice123', ctx()))?.groups).to.have.members(['admins', 'devs', 'engineering']);
    });

    it('binds anonymously when no service account is configured', async () => {
      const { bindDN: _dn, bindPW: _pw, ...anonymous } = baseConfig();
      const { connector } = connectorFor(anonymous);
      expect((await connector.login('alice', 'alice123', ctx()))?.groups).to.have.members(['admins', 'devs', 'ops']);
    });

    it('gives the same null for a wrong password and for an unknown user', async () => {
      const { connector, lines } = connectorFor(baseConfig());
      expect(await connector.login('alice', 'bob123', ctx())).to.equal(null);
      expect(await connector.login('mallory', 'alice123', ctx())).to.equal(null);
      expect(errorsIn(lines)).to.deep.equal([]);
    });

    it('makes the same binds for an unknown user as for a wrong password: no telling them apart by time', async () => {
      const { connector } = connectorFor(baseConfig());
      /** The DNs bound (slapd's accesslog) during one login. */
      const bindsDuring = async (username: string, password: string): Promise<string[]> => {
        const seen = (await binds()).length;
        expect(await connector.login(username, password, ctx())).to.equal(null);
        return (await binds()).slice(seen);
      };
      // Each from a pooled connection bound as the service account, as after the first login.
      await connector.login('alice', 'alice123', ctx());
      const wrong = await bindsDuring('alice', 'wrong-pw');
      await connector.login('alice', 'alice123', ctx());
      const unknown = await bindsDuring('mallory', 'wrong-pw');
      expect(wrong.filter((dn) => dn !== 'cn=reader,dc=example,dc=org')).to.deep.equal(['uid=alice,ou=people,dc=example,dc=org']);
      expect(unknown.filter((dn) => dn !== 'cn=reader,dc=example,dc=org')).to.have.lengthOf(1).and.to.match(/^cn=svc-absent-[0-9a-f]+,ou=people,dc=example,dc=org$/);
      expect(unknown).to.have.lengthOf(wrong.length);
    });

    it('hands the caller the DN each spelling resolves to before the user bind, and binds nothing when the caller refuses it', async () => {
      const { connector } = connectorFor(baseConfig());
      const asked: string[] = [];
      const withGate = (allow: boolean): LoginContext => ({ ...ctx(false), admitEntry: async (entry) => { asked.push(entry); return allow; } });
      // slapd matches uid without regard to case or surrounding spaces: every spelling is carol.
      for (const spelling of ['carol', 'Carol', ' CAROL', 'carol ']) expect(await connector.login(spelling, 'wrong-pw', withGate(true))).to.equal(null);
      expect(asked).to.deep.equal(Array(4).fill('uid=carol,ou=people,dc=example,dc=org'));
      const seen = (await binds()).length;
      let why: string | undefined;
      const refusedCtx: LoginContext = { ...withGate(false), refused: (reason) => { why = reason; } };
      expect(await connector.login('CaRoL', 'carol123', refusedCtx), 'the right password, the entry refused').to.equal(null);
      expect(why).to.equal('entry locked');
      expect((await binds()).slice(seen).filter((dn) => dn !== 'cn=reader,dc=example,dc=org'), 'no user bind').to.deep.equal([]);
      // An unknown name resolves to no entry: nothing to count but the name.
      asked.length = 0;
      expect(await connector.login('mallory', 'x', withGate(true))).to.equal(null);
      expect(asked).to.deep.equal([]);
    });

    it('refuses an empty password before opening any connection', async () => {
      const server = await silentServer();
      try {
        const { connector } = connectorFor({ ...baseConfig(), host: `127.0.0.1:${server.port}` });
        expect(await connector.login('alice', '', ctx())).to.equal(null);
        expect(server.connections()).to.equal(0);
      } finally {
        await server.close();
      }
      // Against the real directory too: an unauthenticated bind would succeed there.
      const { connector } = connectorFor(baseConfig());
      expect(await connector.login('alice', '', ctx())).to.equal(null);
    });

    it('escapes filter characters in the username: no injection, no other user matched', async () => {
      const { connector, lines } = connectorFor(baseConfig());
      const attempts = ['*', '*)(uid=*', 'alice)(uid=*', '*)(|(uid=*', 'alice*', 'a*', '\\', '\\2a', 'alice\\', '\0', 'alice\0', '*\0'];
      for (const username of attempts) {
        for (const password of ['alice123', 'bob123', 'weird123']) {
          expect(await connector.login(username, password, ctx()), JSON.stringify(username)).to.equal(null);
        }
      }
      expect(errorsIn(lines)).to.deep.equal([]);
    });

    it('signs in a user whose uid holds ( ) * \\ (escaped once, unlike Dex) and a non-ASCII uid', async () => {
      const { connector } = connectorFor(baseConfig());
      const weird = await connector.login('we(ird)*\\', 'weird123', ctx());
      expect(weird).to.deep.include({ userId: 'we(ird)*\\', email: 'weird@example.org', groups: ['odd'] });
      expect(await connector.login('zoë', 'zoe123', ctx())).to.deep.include({ userId: 'zoë', email: 'zoe@example.org' });
      expect(await connector.login('we(ird)*', 'weird123', ctx())).to.equal(null);
    });

    it('takes email from emailSuffix and username from the username attribute without nameAttr', async () => {
      const config = baseConfig();
      const { nameAttr: _n, emailAttr: _e, ...userSearch } = config['userSearch'] as Record<string, unknown>;
      const { connector } = connectorFor({ ...config, userSearch: { ...userSearch, emailSuffix: 'corp.example' } });
      expect(await connector.login('alice', 'alice123', ctx())).to.deep.include({ username: 'alice', email: 'alice@corp.example' });
    });

    it('more than one entry for the username is an error, with the reason for the log', async () => {
      const config = baseConfig();
      const { connector, lines } = connectorFor({ ...config, userSearch: { ...(config['userSearch'] as object), username: 'sn' } });
      const err = await rejection(connector.login('Twin', 'dave123', ctx()));
      expectUpstream(err, UpstreamMisconfigured, MISCONFIGURED);
      expect(reasonOf(err, lines)).to.equal('directory misconfigured: the user search matched more than one entry; make userSearch.filter or userSearch.username narrower');
      // Many more than two: the search stops at two (sizeLimit) and says the same.
      const { connector: wide } = connectorFor({ ...config, userSearch: { ...(config['userSearch'] as object), username: 'objectClass' } });
      expectUpstream(await rejection(wide.login('inetOrgPerson', 'alice123', ctx())), UpstreamMisconfigured, MISCONFIGURED);
    });

    it('a configured attribute missing from the entry is an error naming it', async () => {
      const config = baseConfig();
      const { connector, lines } = connectorFor({ ...config, userSearch: { ...(config['userSearch'] as object), idAttr: 'employeeNumber' } });
      const err = await rejection(connector.login('alice', 'alice123', ctx()));
      expectUpstream(err, UpstreamMisconfigured, MISCONFIGURED);
      expect(reasonOf(err, lines)).to.equal('directory misconfigured: the user entry has no employeeNumber (userSearch.idAttr)');
    });

    it('a refused service account: a generic error for the user, the reason in the log, no password', async () => {
      const { connector, lines } = connectorFor({ ...baseConfig(), bindPW: 'not-the-readerpw' });
      const err = await rejection(connector.login('alice', 'alice123', ctx()));
      expectUpstream(err, UpstreamUnavailable, UNREACHABLE);
      expect(reasonOf(err, lines)).to.equal(`directory failed (127.0.0.1:${ldapPort}): the bind as cn=reader,dc=example,dc=org was refused: InvalidCredentialsError (LDAP result 49)`);
      const all = JSON.stringify(lines) + String((err as { reason?: unknown }).reason);
      expect(all).to.not.include('not-the-readerpw');
      expect(all).to.not.include('alice123');
    });
  });

  describe('TLS', () => {
    const tlsConfig = (extra: Record<string, unknown>): Record<string, unknown> => {
      const { insecureNoSSL: _plain, ...rest } = baseConfig();
      return { ...rest, ...extra };
    };

    it('ldaps with the test CA as rootCA (PEM text)', async () => {
      const { connector } = connectorFor(tlsConfig({ host: `127.0.0.1:${ldapsPort}`, rootCA: caPem }));
      expect(await connector.login('alice', 'alice123', ctx())).to.deep.include({ userId: 'alice' });
    });

    it('ldaps with the test CA as rootCAData (base64 PEM)', async () => {
      const { connector } = connectorFor(tlsConfig({ host: `127.0.0.1:${ldapsPort}`, rootCAData: Buffer.from(caPem).toString('base64') }));
      expect(await connector.login('alice', 'alice123', ctx())).to.deep.include({ userId: 'alice' });
    });

    it('StartTLS with the test CA as rootCA', async () => {
      const { connector } = connectorFor(tlsConfig({ host: `127.0.0.1:${ldapPort}`, startTLS: true, rootCA: caPem }));
      expect((await connector.login('bob', 'bob123', ctx()))?.groups).to.have.members(['devs', 'qa']);
    });

    it('ldaps without the CA fails: the certificate is not trusted', async () => {
      const { connector, lines } = connectorFor(tlsConfig({ host: `127.0.0.1:${ldapsPort}` }));
      const err = await rejection(connector.login('alice', 'alice123', ctx()));
      expectUpstream(err, UpstreamUnavailable, UNREACHABLE);
      expect(reasonOf(err, lines)).to.match(/^directory unreachable \(127\.0\.0\.1:\d+\): .*(self-signed|unable to (get|verify))/i);
    });

    it('ldaps to a name the certificate does not carry fails, even with the CA', async () => {
      const { connector, lines } = connectorFor(tlsConfig({ host: `localhost:${ldapsPort}`, rootCA: caPem }));
      const err = await rejection(connector.login('alice', 'alice123', ctx()));
      expectUpstream(err, UpstreamUnavailable, UNREACHABLE);
      expect(reasonOf(err, lines)).to.match(/^directory unreachable \(localhost:\d+\): Hostname\/IP does not match certificate's altnames: Host: localhost/);
    });

    it('StartTLS to a name the certificate does not carry fails too', async () => {
      const { connector, lines } = connectorFor(tlsConfig({ host: `localhost:${ldapPort}`, startTLS: true, rootCA: caPem }));
      const err = await rejection(connector.login('alice', 'alice123', ctx()));
      expectUpstream(err, UpstreamUnavailable, UNREACHABLE);
      expect(reasonOf(err, lines)).to.match(/^directory unreachable \(localhost:\d+\): StartTLS failed: Hostname\/IP does not match certificate's altnames: Host: localhost/);
    });

    it('insecureSkipVerify accepts the untrusted certificate, with a warning at start', async () => {
      const { connector, lines } = connectorFor(tlsConfig({ host: `localhost:${ldapsPort}`, insecureSkipVerify: true }));
      expect(lines.map((l) => l.msg)).to.deep.equal(['ldap: insecureSkipVerify: the directory\'s certificate is not checked']);
      expect(await connector.login('alice', 'alice123', ctx())).to.deep.include({ userId: 'alice' });
    });
  });

  describe('an unreachable directory', () => {
    it('a closed port: a clear error at once', async () => {
      const closed = await freePort();
      const { connector, lines } = quickConnector({ ...baseConfig(), host: `127.0.0.1:${closed}` });
      const err = await rejection(connector.login('alice', 'alice123', ctx()));
      expect(err).to.be.instanceOf(UpstreamUnavailable);
      expect(err.message).to.equal(UNREACHABLE);
      expect(reasonOf(err, lines)).to.equal(`directory unreachable: ECONNREFUSED 127.0.0.1:${closed}`);
    });

    for (const [name, extra] of [
      ['plain LDAP', { insecureNoSSL: true }],
      ['ldaps', { insecureNoSSL: false }],
      ['StartTLS', { insecureNoSSL: false, startTLS: true }],
    ] as const) {
      it(`a server that never answers (${name}): an error within the timeout, no hang`, async () => {
        const server = await silentServer();
        try {
          const { connector, lines } = quickConnector({ ...baseConfig(), ...extra, host: `127.0.0.1:${server.port}` });
          const started = Date.now();
          const err = await rejection(connector.login('alice', 'alice123', ctx()));
          expect(Date.now() - started).to.be.below(QUICK.sessionMs + 1_000);
          expect(err).to.be.instanceOf(UpstreamUnavailable);
          expect(reasonOf(err, lines)).to.match(/^directory unreachable \(127\.0\.0\.1:\d+\): /);
          expect(server.connections()).to.equal(1);
          await expectAllClosed(server);
        } finally {
          await server.close();
        }
      });
    }

    it('a login aborted by its signal stops at once', async () => {
      const server = await silentServer();
      try {
        const { connector } = quickConnector({ ...baseConfig(), host: `127.0.0.1:${server.port}` });
        const controller = new AbortController();
        const started = Date.now();
        const pending = connector.login('alice', 'alice123', { ...ctx(), signal: controller.signal });
        setTimeout(() => controller.abort(new Error('client went away')), 100);
        const err = await rejection(pending);
        expect(err.message).to.equal('client went away');
        expect(Date.now() - started).to.be.below(QUICK.operationMs);
        await expectAllClosed(server);
      } finally {
        await server.close();
      }
    });
  });

  describe('refresh', () => {
    it('reads the groups again while the user is there', async () => {
      const { connector } = connectorFor(baseConfig());
      const identity = (await connector.login('bob', 'bob123', ctx())) as Identity;
      expect(identity.groups).to.have.members(['devs', 'qa']);
      await asAdmin((c) => c.modify('cn=ops,ou=groups,dc=example,dc=org', new Change({ operation: 'add', modification: new Attribute({ type: 'memberUid', values: ['bob'] }) })));
      try {
        const refreshed = await connector.refresh?.(identity, ctx());
        expect(refreshed).to.deep.include({ userId: 'bob', username: 'Bob Builder', email: 'bob@example.org' });
        expect(refreshed?.groups).to.have.members(['devs', 'qa', 'ops']);
      } finally {
        await asAdmin((c) => c.modify('cn=ops,ou=groups,dc=example,dc=org', new Change({ operation: 'delete', modification: new Attribute({ type: 'memberUid', values: ['bob'] }) })));
      }
    });

    it('answers null once the user is deleted', async () => {
      const { connector } = connectorFor(baseConfig());
      const identity = (await connector.login('carol', 'carol123', ctx())) as Identity;
      expect(identity.groups).to.deep.equal(['devs']);
      await asAdmin((c) => c.del('uid=carol,ou=people,dc=example,dc=org'));
      expect(await connector.refresh?.(identity, ctx())).to.equal(null);
    });

    /** Groups by member DN only: the refresh asks for them beside the user. */
    function byDnOnly(recursion = false): Record<string, unknown> {
      const base = baseConfig();
      const groupSearch = base['groupSearch'] as Record<string, unknown>;
      return { ...base, groupSearch: { ...groupSearch, userMatchers: [{ userAttr: 'DN', groupAttr: 'member', ...(recursion ? { recursionGroupAttr: 'member' } : {}) }] } };
    }

    it('reads groups found by DN alone again beside the user, nested ones included', async () => {
      const { connector } = connectorFor(byDnOnly(true));
      const identity = (await connector.login('bob', 'bob123', ctx())) as Identity;
      expect(identity.groups).to.have.members(['devs', 'engineering']);
      const admins = 'cn=admins,ou=groups,dc=example,dc=org';
      const bob = 'uid=bob,ou=people,dc=example,dc=org';
      await asAdmin((c) => c.modify(admins, new Change({ operation: 'add', modification: new Attribute({ type: 'member', values: [bob] }) })));
      try {
        const refreshed = await connector.refresh?.(identity, ctx());
        expect(refreshed?.groups).to.have.members(['devs', 'engineering', 'admins']);
        expect(await connector.refresh?.(identity, ctx(false))).to.deep.include({ userId: 'bob', groups: [] });
      } finally {
        await asAdmin((c) => c.modify(admins, new Change({ operation: 'delete', modification: new Attribute({ type: 'member', values: [bob] }) })));
      }
    });

    it('sends the user search and the group search of a refresh in one write', async () => {
      const { connector } = connectorFor(byDnOnly());
      const identity = (await connector.login('bob', 'bob123', ctx())) as Identity;
      await connector.refresh?.(identity, ctx());   // opens the connection refreshes share, and binds it
      const writes = writesTo(ldapPort);
      try {
        expect(await connector.refresh?.(identity, ctx())).to.deep.include({ userId: 'bob', groups: ['devs'] });
      } finally {
        writes.restore();
      }
      // One write of two requests; sent one by one they would be [1, 1].
      expect(writes.requestsPerWrite).to.deep.equal([2]);
    });

    it('refuses a refresh once the username names another entry, though its groups were asked for beside it', async () => {
      const { connector, lines } = connectorFor(byDnOnly());
      const identity = (await connector.login('erin', 'erin123', ctx())) as Identity;
      const before = 'uid=erin,ou=people,dc=example,dc=org';
      const after = 'cn=Erin Twin,ou=people,dc=example,dc=org';
      const attributes = { objectClass: 'inetOrgPerson', uid: 'erin', cn: 'Erin Twin', sn: 'Twin', mail: 'erin@example.org', userPassword: 'erin123' };
      await asAdmin(async (c) => {
        await c.del(before);
        await c.add(after, attributes);
      });
      try {
        expect(await connector.refresh?.(identity, ctx())).to.equal(null);
        expect(lines.some((l) => l.msg === 'ldap: refresh refused: the username now names another entry')).to.equal(true);
      } finally {
        await asAdmin(async (c) => {
          await c.del(after);
          await c.add(before, attributes);
        });
      }
    });

    it('reads the groups by the DN as the directory spells it when the login\'s differs in case', async () => {
      const { connector } = connectorFor(byDnOnly());
      const identity = (await connector.login('bob', 'bob123', ctx())) as Identity;
      const data = JSON.parse(identity.connectorData ?? '{}') as { username: string; dn: string };
      const shouted = { ...identity, connectorData: JSON.stringify({ ...data, dn: data.dn.toUpperCase() }) };
      const refreshed = await connector.refresh?.(shouted, ctx());
      expect(refreshed?.groups).to.deep.equal(['devs']);
    });

    it('answers null for data that is not this connector\'s', async () => {
      const { connector } = connectorFor(baseConfig());
      expect(await connector.refresh?.({ userId: 'x', username: 'x', emailVerified: true, groups: [], connectorData: 'nope' }, ctx())).to.equal(null);
    });
  });
});
