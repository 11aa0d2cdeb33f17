/**
 * The user's bind of connectors/ldap/connection.ts against a real slapd
 * (scripts/peers/start-slapd.sh, fixtures/ldap/ldap-connector.ldif, started once for the file).
 * The connector refuses an empty password before it connects (ldap.ts); the connection refuses it
 * again on its own, since an LDAP simple bind with a name and an empty password is an
 * unauthenticated bind, which a directory that allows it answers with success.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { Client } from 'ldapts';
import { parseLdapConfig, type LdapConfig } from '../../../connectors/ldap/config.js';
import { DirectoryConnection, DirectoryFailure } from '../../../connectors/ldap/connection.js';
import { ProblemSink, formatProblem } from '../../../src/config/problems.js';
import { freePort, startPeer, type Peer } from '../../helpers/peers.js';

const FIXTURES = fileURLToPath(new URL('../../../fixtures/', import.meta.url));
const CAROL = 'uid=carol,ou=people,dc=example,dc=org';

describe('ldap connection: the user\'s bind (real slapd)', function () {
  let peer: Peer;
  let ldapPort: number;
  let config: LdapConfig;
  const clients: Client[] = [];

  before(async function () {
    this.timeout(60_000);
    ldapPort = await freePort();
    peer = await startPeer('start-slapd.sh', [String(ldapPort)], { LDAPS: '0', USERS_LDIF: join(FIXTURES, 'ldap', 'ldap-connector.ldif') });
    const sink = new ProblemSink();
    const parsed = parseLdapConfig({
      host: `127.0.0.1:${ldapPort}`, insecureNoSSL: true, bindDN: 'cn=reader,dc=example,dc=org', bindPW: 'readerpw',
      userSearch: { baseDN: 'ou=people,dc=example,dc=org', filter: '(objectClass=inetOrgPerson)', username: 'uid', idAttr: 'uid', emailAttr: 'mail', nameAttr: 'cn' },
    }, sink.scoped('svc-cm'));
    if (parsed === undefined) throw new Error(sink.problems.map(formatProblem).join('\n'));
    config = parsed;
  });

  after(async function () {
    for (const client of clients) await client.unbind().catch(() => undefined);
    await peer?.stop();
  });

  /** A connection bound as the service account, and the binds it sends from then on. */
  async function serviceConnection(): Promise<{ conn: DirectoryConnection; binds: string[] }> {
    const client = new Client({ url: `ldap://127.0.0.1:${ldapPort}`, connectTimeout: 2_000, timeout: 2_000 });
    clients.push(client);
    const conn = new DirectoryConnection(client, config, false);
    await conn.serviceBind();
    const binds: string[] = [];
    const bind = client.bind.bind(client);
    client.bind = (dn, password) => {
      binds.push(String(dn));
      return bind(dn, password);
    };
    return { conn, binds };
  }

  it('refuses an empty password without binding, and stays bound as the service account', async function () {
    const { conn, binds } = await serviceConnection();
    expect(conn.boundAsService).to.equal(true);
    expect(await conn.userBind(CAROL, '')).to.equal(false);
    expect(binds).to.deep.equal([]);
    expect(conn.boundAsService).to.equal(true);
  });

  it('binds as the user: true for the right password, false for a wrong one, and the connection is no longer the service account\'s', async function () {
    const right = await serviceConnection();
    expect(await right.conn.userBind(CAROL, 'carol123')).to.equal(true);
    expect(right.binds).to.deep.equal([CAROL]);
    expect(right.conn.boundAsService).to.equal(false);
    const wrong = await serviceConnection();
    expect(await wrong.conn.userBind(CAROL, 'carol124')).to.equal(false);
    expect(wrong.conn.boundAsService).to.equal(false);
  });

  it('names the stage when the directory fails the bind for another reason than the credentials', async function () {
    const { conn } = await serviceConnection();
    const failure = await conn.userBind('not a dn', 'x').then(() => undefined, (err: unknown) => err);
    expect(failure).to.be.instanceOf(DirectoryFailure);
    expect((failure as DirectoryFailure).stage).to.equal('user-bind');
    expect((failure as Error).message).to.match(/^the user's bind failed: /);
    expect((failure as Error).cause).to.be.instanceOf(Error);
  });

  it('names a directory it cannot reach as such, and binds nothing once the session has ended', async function () {
    const nowhere = new Client({ url: `ldap://127.0.0.1:${await freePort()}`, connectTimeout: 2_000, timeout: 2_000 });
    const unreachable = await new DirectoryConnection(nowhere, config, false).userBind(CAROL, 'carol123').then(() => undefined, (err: unknown) => err);
    expect(unreachable).to.be.instanceOf(DirectoryFailure);
    expect((unreachable as DirectoryFailure).stage).to.equal('connect');
    const ended = await serviceConnection();
    ended.conn.closed = true;
    const refused = await ended.conn.userBind(CAROL, 'carol123').then(() => undefined, (err: unknown) => err);
    expect(refused).to.be.instanceOf(DirectoryFailure);
    expect((refused as DirectoryFailure).stage).to.equal('timeout');
    expect(ended.binds).to.deep.equal([]);
  });
});
