/**
 * The LDAP connector's connection reuse (connectors/ldap/pool.ts) against a real slapd
 * (scripts/peers/start-slapd.sh, fixtures/ldap/ldap-connector.ldif, started once for the file),
 * reached through a small TCP relay in this file that counts connections and can drop them, as
 * a directory restart or an idle timeout would.
 */
import { expect } from 'chai';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Attribute, Change, Client } from 'ldapts';
import { pino } from 'pino';
import type { Identity, LoginContext } from '../../../connectors/connector.js';
import { parseLdapConfig } from '../../../connectors/ldap/config.js';
import { LdapConnector } from '../../../connectors/ldap/ldap.js';
import type { PoolOptions } from '../../../connectors/ldap/pool.js';
import { DirectoryFailure } from '../../../connectors/ldap/connection.js';
import { ProblemSink, formatProblem } from '../../../src/config/problems.js';
import { asDirectoryAdmin } from './directory-admin.js';
import { writesTo } from './socket-writes.js';
import { listenOnLoopback } from '../../helpers/loopback.js';
import { freePort, startPeer, type Peer } from '../../helpers/peers.js';
import { silentServer } from '../../helpers/silent-server.js';

const FIXTURES = fileURLToPath(new URL('../../../fixtures/', import.meta.url));
const QUICK = { connectMs: 2_000, operationMs: 2_000, sessionMs: 5_000 };

let peer: Peer;
let ldapPort: number;

/** Relays to slapd; counts the connections it accepted and can break them in two ways. */
interface Relay {
  readonly port: number;
  connections(): number;
  open(): number;
  /** Closes every relayed connection now, both sides. */
  dropAll(): void;
  /** The connections open now are closed when their client sends the next request; new ones pass. */
  dropOnNextRequest(): void;
  /** From now on a connection is closed right after its first answer reaches the client. */
  dropAfterFirstAnswer(): void;
  close(): Promise<void>;
}

async function relay(): Promise<Relay> {
  let count = 0;
  let dropAfterFirst = false;
  const pairs = new Set<[Socket, Socket]>();
  const doomed = new WeakSet<Socket>();
  const server: Server = createServer((client) => {
    count++;
    const upstream = connect(ldapPort, '127.0.0.1');
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      pairs.delete(pair);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.on('data', (chunk: Buffer) => {
      if (doomed.has(client)) drop();
      else upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (dropAfterFirst) client.end(chunk, drop);
      else client.write(chunk);
    });
  });
  const port = await listenOnLoopback(server);
  return {
    port,
    connections: () => count,
    open: () => pairs.size,
    dropAll: () => {
      for (const [client, upstream] of [...pairs]) {
        client.destroy();
        upstream.destroy();
      }
    },
    dropOnNextRequest: () => {
      for (const [client] of pairs) doomed.add(client);
    },
    dropAfterFirstAnswer: () => {
      dropAfterFirst = true;
    },
    close: () => new Promise<void>((resolve) => {
      for (const [client, upstream] of pairs) {
        client.destroy();
        upstream.destroy();
      }
      server.close(() => resolve());
    }),
  };
}

function connectorVia(port: number, pool: PoolOptions = {}, timeouts = QUICK): LdapConnector {
  const sink = new ProblemSink();
  const config = parseLdapConfig({
    host: `127.0.0.1:${port}`,
    insecureNoSSL: true,
    bindDN: 'cn=reader,dc=example,dc=org',
    bindPW: 'readerpw',
    userSearch: { baseDN: 'ou=people,dc=example,dc=org', filter: '(objectClass=inetOrgPerson)', username: 'uid', idAttr: 'uid', emailAttr: 'mail', nameAttr: 'cn' },
    groupSearch: {
      baseDN: 'ou=groups,dc=example,dc=org', nameAttr: 'cn',
      userMatchers: [{ userAttr: 'DN', groupAttr: 'member' }, { userAttr: 'uid', groupAttr: 'memberUid' }],
    },
  }, sink.scoped('svc-cm'));
  if (config === undefined) throw new Error(sink.problems.map(formatProblem).join('\n'));
  return new LdapConnector(config, { upstreamFetch: () => globalThis.fetch, now: () => new Date(), log: pino({ level: 'silent' }) }, { timeouts, pool });
}

function ctx(wantGroups = true): LoginContext {
  return { callbackUrl: 'https://svc.example.org/api/idp/callback', wantGroups, signal: new AbortController().signal };
}

const asAdmin = <T>(work: (client: Client) => Promise<T>): Promise<T> => asDirectoryAdmin(ldapPort, work);

const memberUid = (operation: 'add' | 'delete', group: string, uid: string) => asAdmin((c) =>
  c.modify(`cn=${group},ou=groups,dc=example,dc=org`, new Change({ operation, modification: new Attribute({ type: 'memberUid', values: [uid] }) })));

/** Until `check` holds (socket events take a turn of the event loop or two). */
async function eventually(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 100 && !check(); i++) await new Promise((r) => setTimeout(r, 20));
  expect(check(), what).to.equal(true);
}

describe('ldap connector: connection reuse', function () {
  let via: Relay;
  let connector: LdapConnector | undefined;

  before(async function () {
    this.timeout(60_000);
    ldapPort = await freePort();
    peer = await startPeer('start-slapd.sh', [String(ldapPort)], { LDAPS: '0', USERS_LDIF: join(FIXTURES, 'ldap', 'ldap-connector.ldif') });
  });

  after(async () => {
    await peer?.stop();
  });

  beforeEach(async () => {
    via = await relay();
  });

  afterEach(async () => {
    await connector?.close();
    connector = undefined;
    await via.close();
  });

  it('refreshes share one connection beside the login\'s, and still read the directory again: new groups, then the user gone', async () => {
    connector = connectorVia(via.port);
    const carol = (await connector.login('carol', 'carol123', ctx())) as Identity;
    expect(carol.groups).to.deep.equal(['devs']);
    expect(connector.pool.idleCount).to.equal(1);
    await memberUid('add', 'ops', 'carol');
    expect((await connector.refresh(carol, ctx()))?.groups).to.have.members(['devs', 'ops']);
    await memberUid('delete', 'ops', 'carol');
    expect((await connector.refresh(carol, ctx()))?.groups).to.deep.equal(['devs']);
    await asAdmin((c) => c.del('uid=carol,ou=people,dc=example,dc=org'));
    expect(await connector.refresh(carol, ctx())).to.equal(null);
    expect(via.connections(), 'one connection for the login, one the three refreshes share').to.equal(2);
  });

  it('a connection left bound as a user, or anonymous after a refused bind, is closed, never reused', async () => {
    connector = connectorVia(via.port);
    // Without groups the login ends on the user's own bind.
    expect(await connector.login('bob', 'bob123', ctx(false))).to.deep.include({ userId: 'bob', groups: [] });
    expect(connector.pool.idleCount).to.equal(0);
    expect(await connector.login('bob', 'not-bobs', ctx())).to.equal(null);
    expect(connector.pool.idleCount).to.equal(0);
    await eventually(() => via.open() === 0, 'both connections closed');
    expect(via.connections()).to.equal(2);
    // The next login opens its own and, ending bound as the service account, leaves it for reuse.
    expect((await connector.login('bob', 'bob123', ctx()))?.groups).to.have.members(['devs', 'qa']);
    expect(connector.pool.idleCount).to.equal(1);
    expect(via.connections()).to.equal(3);
  });

  it('a pooled connection the directory closed while idle is left out; the refresh opens a new one', async () => {
    connector = connectorVia(via.port);
    const alice = (await connector.login('alice', 'alice123', ctx())) as Identity;
    via.dropAll();
    await eventually(() => via.open() === 0, 'the relay dropped the connection');
    await new Promise((r) => setTimeout(r, 50));
    expect((await connector.refresh(alice, ctx()))?.groups).to.have.members(['admins', 'devs', 'ops']);
    expect(via.connections()).to.equal(2);
  });

  it('a pooled connection that fails on its first request is replaced once, in the same refresh', async () => {
    connector = connectorVia(via.port);
    const alice = (await connector.login('alice', 'alice123', ctx())) as Identity;
    // As if the directory closed it just as the refresh sent its search: the search fails.
    via.dropOnNextRequest();
    expect((await connector.refresh(alice, ctx()))?.groups).to.have.members(['admins', 'devs', 'ops']);
    expect(via.connections(), 'the pooled one and one new one').to.equal(2);
    expect(connector.pool.idleCount).to.equal(1);
  });

  it('a connection the directory closed between two operations is never reopened (ldapts would reopen it unbound)', async () => {
    connector = connectorVia(via.port);
    via.dropAfterFirstAnswer();
    const failure = await connector.pool.run(new AbortController().signal, async (conn) => {
      await conn.serviceBind();
      // The relay closed the connection after answering the bind; let the client see it.
      await eventually(() => via.open() === 0, 'the relay closed the connection');
      await new Promise((r) => setTimeout(r, 100));
      return conn.findUser('alice');
    }).then(() => undefined, (err: unknown) => err as Error & { stage?: string });
    expect(failure?.name).to.equal('DirectoryFailure');
    expect(failure?.stage).to.equal('connect');
    expect(failure?.message).to.equal('the user search failed: the directory closed the connection');
    expect(via.connections(), 'no second, unbound connection').to.equal(1);
    expect(connector.pool.idleCount).to.equal(0);
  });

  it('keeps at most maxIdle connections, closes idle ones after idleMs and all of them at close', async () => {
    connector = connectorVia(via.port, { maxIdle: 2, idleMs: 60_000 });
    const fresh = await Promise.all(Array.from({ length: 5 }, () => connector?.login('bob', 'bob123', ctx())));
    expect(fresh.map((f) => f?.userId)).to.deep.equal(['bob', 'bob', 'bob', 'bob', 'bob']);
    expect(connector.pool.idleCount).to.equal(2);
    await eventually(() => via.open() === 2, 'the connections over the bound closed');
    await connector.close();
    expect(connector.pool.idleCount).to.equal(0);
    await eventually(() => via.open() === 0, 'closed with the connector');

    connector = connectorVia(via.port, { idleMs: 100 });
    await connector.login('bob', 'bob123', ctx());
    expect(connector.pool.idleCount).to.equal(1);
    await eventually(() => via.open() === 0 && connector?.pool.idleCount === 0, 'closed after idleMs');
  });
  it('opens at most maxOpen connections at once: the other logins wait for one and are served on it', async () => {
    connector = connectorVia(via.port, { maxOpen: 2 });
    await connector.login('bob', 'bob123', ctx());
    const before = via.connections();
    const fresh = await Promise.all(Array.from({ length: 6 }, () => connector?.login('bob', 'bob123', ctx())));
    expect(fresh.map((f) => f?.userId)).to.deep.equal(['bob', 'bob', 'bob', 'bob', 'bob', 'bob']);
    // The first login's pooled connection and one more; without the bound each login would open its own.
    expect(via.connections() - before, 'connections opened by six logins at once').to.equal(1);
  });

  it('concurrent refreshes share one connection: the searches of those in one turn leave in one write', async () => {
    connector = connectorVia(via.port);
    const bob = (await connector.login('bob', 'bob123', ctx())) as Identity;
    await connector.refresh(bob, ctx());   // opens the shared connection and binds it
    const before = via.connections();
    const writes = writesTo(via.port);
    try {
      const fresh = await Promise.all(Array.from({ length: 4 }, () => connector?.refresh(bob, ctx())));
      expect(fresh.map((f) => f?.groups)).to.deep.equal([['devs', 'qa'], ['devs', 'qa'], ['devs', 'qa'], ['devs', 'qa']]);
    } finally {
      writes.restore();
    }
    // The four user searches in one write; each refresh's group searches (they need its entry)
    // share writes with whatever else reached the connection in the same turn.
    const [first, ...rest] = writes.requestsPerWrite;
    expect(first, 'the user searches of the four refreshes').to.equal(4);
    expect(rest.reduce((a, b) => a + b, 0), 'their group searches, by DN and by uid').to.equal(8);
    expect(via.connections() - before).to.equal(0);
  });

  it('a shared connection the directory dropped is replaced, and the refresh on it still answers', async () => {
    connector = connectorVia(via.port);
    const bob = (await connector.login('bob', 'bob123', ctx())) as Identity;
    expect((await connector.refresh(bob, ctx()))?.userId).to.equal('bob');
    via.dropAll();
    await eventually(() => via.open() === 0, 'the directory dropped every connection');
    expect((await connector.refresh(bob, ctx()))?.userId).to.equal('bob');
    expect((await connector.refresh(bob, ctx()))?.userId).to.equal('bob');
  });

  it('past maxWaiting waiting logins the next one fails at once; a waiting one leaves the queue when its caller gives up', async () => {
    // A directory that accepts connections and never answers: the first login holds the one connection.
    const mute = await silentServer();
    connector = connectorVia(mute.port, { maxOpen: 1, maxWaiting: 1 }, { connectMs: 2_000, operationMs: 2_000, sessionMs: 1_500 });
    const attempt = (signal = new AbortController().signal) =>
      (connector as LdapConnector).login('bob', 'bob123', { ...ctx(), signal }).then(() => 'answered', (err: unknown) => err);
    try {
      const holding = attempt();
      const giveUp = new AbortController();
      const waiting = attempt(giveUp.signal);
      const started = Date.now();
      const refused = (await attempt()) as Error;
      expect(Date.now() - started, 'refused at once').to.be.below(500);
      expect(refused.message).to.equal('the directory is unreachable; try again later');
      expect(refused.cause).to.be.instanceOf(DirectoryFailure).and.to.have.property('stage', 'busy');

      giveUp.abort(new Error('the caller gave up'));
      expect(((await waiting) as Error).message).to.equal('the caller gave up');
      // Its place is free again: the next one waits (it ends with its own deadline, not at once).
      const next = attempt();
      const early = await Promise.race([next, new Promise((resolve) => setTimeout(() => resolve('still waiting'), 200))]);
      expect(early).to.equal('still waiting');
      expect(((await holding) as Error).cause).to.be.instanceOf(DirectoryFailure).and.to.have.property('stage', 'timeout');
      expect(((await next) as Error).cause).to.be.instanceOf(DirectoryFailure).and.to.have.property('stage', 'timeout');
    } finally {
      await mute.close();
    }
  });
});
