/** GET /api/v1/session/list and DELETE /api/v1/session/{id} on a running server (memory state). */
import { expect } from 'chai';
import { decodeJwt } from 'jose';
import { rm } from 'node:fs/promises';
import { accountsConfigDir, call, login, PASSWORDS } from '../../helpers/accounts-fixture.js';
import { collectAudit, type CollectedAudit } from '../../helpers/audit.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

describe('HTTP /api/v1/session/list and DELETE /api/v1/session/{id}', function () {
  this.timeout(20_000);
  let dir: string;
  let server: TestServer;
  let audit: CollectedAudit;

  before(async function () {
    dir = accountsConfigDir();
    audit = collectAudit();
    server = await startTestServer(dir, { audit });
  });
  after(async function () {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** A password login with a user agent of one's choice; the token. */
  async function loginAs(username: string, password: string, userAgent: string): Promise<string> {
    const res = await fetch(`${server.url}/api/v1/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'user-agent': userAgent },
      body: JSON.stringify({ username, password }),
    });
    expect(res.status).to.equal(200);
    return String(((await res.json()) as { token: string }).token);
  }

  type Item = Record<string, unknown>;
  const items = async (token: string, query = ''): Promise<Item[]> => {
    const reply = await call(server.url, 'GET', `/api/v1/session/list${query}`, { token });
    expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
    return reply.body['items'] as Item[];
  };

  it('lists the caller\'s sessions newest first: kind, client from the user agent, address, RFC 3339 times, current', async function () {
    const cli = await loginAs('bob', PASSWORDS.bob, 'svc/1.2.3');
    await new Promise((r) => setTimeout(r, 5));
    const browser = await loginAs('bob', PASSWORDS.bob, 'Mozilla/5.0 (X11; Linux x86_64) Chrome/130');
    await new Promise((r) => setTimeout(r, 5));
    const api = await loginAs('bob', PASSWORDS.bob, 'curl/8.0');
    const listed = await items(browser);
    expect(listed.map((i) => i['id'])).to.deep.equal([api, browser, cli].map((t) => decodeJwt(t).jti));
    expect(listed.map((i) => [i['kind'], i['client'], i['current']])).to.deep.equal([['local', 'api', false], ['local', 'browser', true], ['local', 'cli', false]]);
    for (const item of listed) {
      expect(item['address']).to.equal('127.0.0.1');
      for (const key of ['createdAt', 'lastUsedAt', 'expiresAt']) expect(item[key]).to.match(RFC3339);
      expect(String(item['lastUsedAt']).slice(17)).to.match(/^00(\.000)?Z$/); // to the minute
    }
  });

  it('ends one session: its token fails at once, the others go on, the trail records it', async function () {
    const keep = await login(server.url, 'alice', PASSWORDS.alice);
    const doomed = await login(server.url, 'alice', PASSWORDS.alice);
    const doomedId = String(decodeJwt(doomed).jti);
    expect((await call(server.url, 'GET', '/api/v1/account/alice', { token: doomed })).status).to.equal(200);
    const reply = await call(server.url, 'DELETE', `/api/v1/session/${doomedId}`, { token: keep });
    expect(reply.status).to.equal(200);
    const refused = await call(server.url, 'GET', '/api/v1/account/alice', { token: doomed });
    expect(refused.status).to.equal(401);
    expect(refused.body).to.deep.equal({ error: 'unauthenticated', message: 'token is revoked; log in again' });
    expect((await call(server.url, 'GET', '/api/v1/account/alice', { token: keep })).status).to.equal(200);
    expect((await items(keep)).map((i) => i['id'])).not.to.include(doomedId);
    const event = audit.of('session-ended').find((e) => e.svc?.['sessionId'] === doomedId);
    expect(event).to.deep.include({ outcome: 'success', user: { id: 'alice', domain: 'svc' } });
    expect(event?.svc).to.deep.include({ via: 'list', kind: 'local' });
    expect(JSON.stringify(audit.events)).not.to.include(doomed);
  });

  it('refuses another account\'s session: 404 as one\'s own, 403 with ?account= without the right', async function () {
    const alice = await login(server.url, 'alice', PASSWORDS.alice);
    const bob = await login(server.url, 'bob', PASSWORDS.bob);
    const aliceId = String(decodeJwt(alice).jti);
    const asOwn = await call(server.url, 'DELETE', `/api/v1/session/${aliceId}`, { token: bob });
    expect(asOwn.status).to.equal(404);
    expect(asOwn.body).to.deep.equal({ error: 'not_found', message: `no session '${aliceId}' of 'bob'` });
    const named = await call(server.url, 'DELETE', `/api/v1/session/${aliceId}?account=alice`, { token: bob });
    expect(named.status).to.equal(403);
    expect(named.body).to.deep.equal({ error: 'permission_denied', message: 'permission denied: accounts, update, alice' });
    const list = await call(server.url, 'GET', '/api/v1/session/list?account=alice', { token: bob });
    expect(list.status).to.equal(403);
    expect((await call(server.url, 'GET', '/api/v1/account/alice', { token: alice })).status).to.equal(200);
  });

  it('lets an admin (accounts, update, <name>) list and end another account\'s sessions', async function () {
    const admin = await login(server.url, 'admin', PASSWORDS.admin);
    const erin = await login(server.url, 'alice', PASSWORDS.alice);
    const id = String(decodeJwt(erin).jti);
    const listed = await items(admin, '?account=alice');
    expect(listed.map((i) => i['id'])).to.include(id);
    expect(listed.every((i) => i['current'] === false)).to.equal(true);
    expect((await call(server.url, 'DELETE', `/api/v1/session/${id}?account=alice`, { token: admin })).status).to.equal(200);
    expect((await call(server.url, 'GET', '/api/v1/account/alice', { token: erin })).status).to.equal(401);
    const event = audit.of('session-ended').find((e) => e.svc?.['sessionId'] === id);
    expect(event?.svc).to.deep.include({ via: 'list', endedBy: 'admin' });
  });

  it('answers 401 without a token and 400 for a repeated account', async function () {
    expect((await call(server.url, 'GET', '/api/v1/session/list')).status).to.equal(401);
    const admin = await login(server.url, 'admin', PASSWORDS.admin);
    const twice = await call(server.url, 'GET', '/api/v1/session/list?account=a&account=b', { token: admin });
    expect(twice.status).to.equal(400);
    expect(twice.body).to.deep.equal({ error: 'invalid_request', message: "query 'account' is given more than once" });
  });

  it('logout ends the session in the list too', async function () {
    const token = await login(server.url, 'bob', PASSWORDS.bob);
    const id = String(decodeJwt(token).jti);
    expect((await call(server.url, 'DELETE', '/api/v1/session', { token })).status).to.equal(200);
    const other = await login(server.url, 'bob', PASSWORDS.bob);
    expect((await items(other)).map((i) => i['id'])).not.to.include(id);
    expect(audit.of('session-ended').find((e) => e.svc?.['sessionId'] === id)?.svc).to.deep.include({ via: 'logout' });
  });
});
