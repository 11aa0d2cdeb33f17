/** /api/v1/account/... on a running server: rights, tokens, password changes, can-i. */
import { expect } from 'chai';
import { decodeJwt } from 'jose';
import { readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { SETTINGS_SECRET } from '../../../src/config/manifests.js';
import { accountsConfigDir, call, login, PASSWORDS } from '../../helpers/accounts-fixture.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import { cleanUpTempDirs } from '../../helpers/temp-dir.js';

describe('HTTP /api/v1/account', function () {
  cleanUpTempDirs();
  this.timeout(30_000);
  let dir: string;
  let server: TestServer;
  let base: string;
  let admin: string;
  let alice: string;
  let bob: string;

  before(async function () {
    dir = accountsConfigDir({ rbac: { 'policy.csv': 'p, bob, accounts, get, alice, allow\np, bob, extensions, *, proj/ext, allow\n' } });
    server = await startTestServer(dir);
    base = server.url;
    [admin, alice, bob] = await Promise.all([login(base, 'admin', PASSWORDS.admin), login(base, 'alice', PASSWORDS.alice), login(base, 'bob', PASSWORDS.bob)]);
  });
  after(async function () {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('lists every account for admin, and only the readable ones for others', async function () {
    const all = await call(base, 'GET', '/api/v1/account', { token: admin });
    expect(all.status).to.equal(200);
    const items = all.body['items'] as { name: string }[];
    expect(items.map((a) => a.name)).to.deep.equal(['admin', 'alice', 'bob', 'carol', 'dave']);
    expect(items[4]).to.deep.equal({ name: 'dave', enabled: false, capabilities: ['login'], tokens: [] });
    expect(((await call(base, 'GET', '/api/v1/account', { token: alice })).body['items'] as { name: string }[]).map((a) => a.name)).to.deep.equal(['alice']);
    expect(((await call(base, 'GET', '/api/v1/account', { token: bob })).body['items'] as { name: string }[]).map((a) => a.name)).to.deep.equal(['alice', 'bob']);
  });

  it('gets itself always, others only with accounts/get, and 404 for a missing one', async function () {
    expect((await call(base, 'GET', '/api/v1/account/alice', { token: alice })).body).to.deep.equal({ name: 'alice', enabled: true, capabilities: ['apiKey', 'login'], tokens: [] });
    const denied = await call(base, 'GET', '/api/v1/account/bob', { token: alice });
    expect(denied.status).to.equal(403);
    expect(denied.body).to.deep.equal({ error: 'permission_denied', message: 'permission denied: accounts, get, bob' });
    expect((await call(base, 'GET', '/api/v1/account/alice', { token: bob })).status).to.equal(200);
    const missing = await call(base, 'GET', '/api/v1/account/nobody', { token: admin });
    expect(missing.status).to.equal(404);
    expect(missing.body).to.deep.equal({ error: 'account_not_found', message: "account 'nobody' does not exist" });
  });

  it('can-i answers for the caller: yes/no, objects with an encoded slash', async function () {
    expect((await call(base, 'GET', '/api/v1/account/can-i/accounts/update/bob', { token: admin })).body).to.deep.equal({ value: 'yes' });
    expect((await call(base, 'GET', '/api/v1/account/can-i/accounts/update/bob', { token: alice })).body).to.deep.equal({ value: 'no' });
    expect((await call(base, 'GET', '/api/v1/account/can-i/accounts/get/alice', { token: bob })).body).to.deep.equal({ value: 'yes' });
    // bob's rule names exactly proj/ext: a yes proves the %2F arrived as a slash in one segment.
    expect((await call(base, 'GET', '/api/v1/account/can-i/extensions/*/proj%2Fext', { token: bob })).body).to.deep.equal({ value: 'yes' });
    expect((await call(base, 'GET', '/api/v1/account/can-i/extensions/*/proj%2Fother', { token: bob })).body).to.deep.equal({ value: 'no' });
    expect((await call(base, 'GET', '/api/v1/account/can-i/accounts/get/alice')).status).to.equal(401);
  });

  it('refuses names no account can have and unknown can-i resources with 400, before any rights are asked', async function () {
    const long = 'a'.repeat(8 * 1024); // Node refuses request heads past 16 KB itself (431)
    const name = await call(base, 'GET', `/api/v1/account/${long}`, { token: alice });
    expect(name.status).to.equal(400);
    expect(name.body).to.deep.equal({
      error: 'invalid_request',
      message: `'${'a'.repeat(40)}…' is not an account name (at most 32 lower-case letters, digits, '-', '.' or '_', starting and ending with a letter or digit)`,
    });
    const resource = await call(base, 'GET', `/api/v1/account/can-i/${long}/get/x`, { token: alice });
    expect(resource.status).to.equal(400);
    expect(resource.body['error']).to.equal('invalid_request');
  });

  it('can-i applies the self rules: a user may always get and update itself, and nothing more', async function () {
    const canI = async (path: string) => (await call(base, 'GET', `/api/v1/account/can-i/${path}`, { token: alice })).body;
    expect(await canI('accounts/get/alice')).to.deep.equal({ value: 'yes' });
    expect(await canI('accounts/update/alice')).to.deep.equal({ value: 'yes' });
    expect(await canI('accounts/update/bob')).to.deep.equal({ value: 'no' });
    expect(await canI('accounts/delete/alice')).to.deep.equal({ value: 'no' });
    expect(await canI('extensions/*/alice')).to.deep.equal({ value: 'no' });
  });

  it('generates an API token (apiKey capability), lists it, accepts it, and deleting it revokes it', async function () {
    const made = await call(base, 'POST', '/api/v1/account/alice/token', { token: alice, body: { id: 'ci', expiresIn: 3600 } });
    expect(made.status).to.equal(200);
    const token = String(made.body['token']);
    const claims = decodeJwt(token);
    expect(claims).to.include({ iss: 'svc', sub: 'alice:apiKey' });
    expect(claims.jti).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(claims.exp).to.equal((claims.iat ?? 0) + 3600);
    const view = await call(base, 'GET', '/api/v1/account/alice', { token });
    expect(view.body['tokens']).to.deep.equal([{ id: 'ci', issuedAt: claims.iat, expiresAt: claims.exp }]);
    const dup = await call(base, 'POST', '/api/v1/account/alice/token', { token: alice, body: { id: 'ci' } });
    expect(dup.status).to.equal(409);
    expect(dup.body).to.deep.equal({ error: 'conflict', message: "account 'alice' already has a token with id 'ci'" });
    const forever = await call(base, 'POST', '/api/v1/account/alice/token', { token: admin, body: { expiresIn: '0s' } });
    expect(decodeJwt(String(forever.body['token'])).exp).to.equal(undefined);
    const del = await call(base, 'DELETE', '/api/v1/account/alice/token/ci', { token: alice });
    expect(del.status).to.equal(200);
    const dead = await call(base, 'GET', '/api/v1/account/alice', { token });
    expect(dead.body).to.deep.equal({ error: 'unauthenticated', message: "this API token of account 'alice' was deleted" });
    const gone = await call(base, 'DELETE', '/api/v1/account/alice/token/ci', { token: alice });
    expect(gone.status).to.equal(404);
    expect(gone.body).to.deep.equal({ error: 'not_found', message: "token with id 'ci' does not exist for account 'alice'" });
  });

  it('a deleted API token stays dead when a new token reuses its id; the record keeps the random jti', async function () {
    const leaked = String((await call(base, 'POST', '/api/v1/account/alice/token', { token: alice, body: { id: 'reused' } })).body['token']);
    expect((await call(base, 'DELETE', '/api/v1/account/alice/token/reused', { token: alice })).status).to.equal(200);
    const again = await call(base, 'POST', '/api/v1/account/alice/token', { token: alice, body: { id: 'reused' } });
    expect(again.status).to.equal(200);
    const fresh = String(again.body['token']);
    expect((await call(base, 'GET', '/api/v1/account/alice', { token: leaked })).body).to.deep.equal({
      error: 'unauthenticated', message: "this API token of account 'alice' was deleted",
    });
    expect((await call(base, 'GET', '/api/v1/account/alice', { token: fresh })).status).to.equal(200);
    const stored = server.services.store.current().secrets.get('svc-secret')?.data['accounts.alice.tokens'] ?? '[]';
    const record = (JSON.parse(stored) as { id: string; jti?: string; iat: number }[]).find((t) => t.id === 'reused');
    expect(record).to.deep.equal({ id: 'reused', jti: decodeJwt(fresh).jti, iat: decodeJwt(fresh).iat });
    expect((await call(base, 'DELETE', '/api/v1/account/alice/token/reused', { token: alice })).status).to.equal(200);
    expect((await call(base, 'GET', '/api/v1/account/alice', { token: fresh })).status).to.equal(401);
  });

  it('refuses tokens without the apiKey capability or the update right', async function () {
    const noCap = await call(base, 'POST', '/api/v1/account/bob/token', { token: bob, body: {} });
    expect(noCap.status).to.equal(403);
    expect(noCap.body).to.deep.equal({ error: 'permission_denied', message: "account 'bob' does not have the apiKey capability" });
    const other = await call(base, 'POST', '/api/v1/account/alice/token', { token: bob, body: {} });
    expect(other.body).to.deep.equal({ error: 'permission_denied', message: 'permission denied: accounts, update, alice' });
    const badExpiry = await call(base, 'POST', '/api/v1/account/alice/token', { token: alice, body: { expiresIn: 'soon' } });
    expect(badExpiry.body).to.deep.equal({ error: 'invalid_request', message: "field 'expiresIn' must be a whole number of seconds or a duration such as 24h, 90m (0: never)" });
    const absurd = await call(base, 'POST', '/api/v1/account/alice/token', { token: alice, body: { expiresIn: '99999999999h' } });
    expect(absurd.body).to.deep.equal({ error: 'invalid_request', message: 'expiresIn must be at most 100 years (3155760000 s); 0 makes a token that never expires' });
    const dotted = await call(base, 'POST', '/api/v1/account/alice/token', { token: alice, body: { id: '..' } });
    expect(dotted.body['message']).to.equal("token id '..' must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit");
  });

  it('100 concurrent token generations leave 100 tokens and the rest of svc-secret untouched', async function () {
    const file = join(dir, 'svc-secret.yaml');
    const before = readFileSync(file, 'utf8');
    const replies = await Promise.all(Array.from({ length: 100 }, (_, i) => call(base, 'POST', '/api/v1/account/carol/token', { token: admin, body: { id: `bulk-${i}` } })));
    expect(replies.filter((r) => r.status !== 200)).to.deep.equal([]);
    const after = readFileSync(file, 'utf8');
    const stored = server.services.store.current().secrets.get('svc-secret')?.data['accounts.carol.tokens'] ?? '[]';
    const ids = (JSON.parse(stored) as { id: string }[]).map((t) => t.id);
    expect(ids.sort()).to.deep.equal(Array.from({ length: 100 }, (_, i) => `bulk-${i}`).sort());
    // Byte for byte the same file, but for the one new key: comments, order, formatting kept.
    const withoutNewKey = after.split('\n').filter((line) => !line.trimStart().startsWith('accounts.carol.tokens:')).join('\n');
    expect(withoutNewKey).to.equal(before);
    expect(after).to.include('  operator.note: keep me # an operator comment\n');
  });

  it('changes passwords: own current password, sessions before die, API tokens live, the caller gets a new session', async function () {
    this.timeout(30_000);
    const apiToken = String((await call(base, 'POST', '/api/v1/account/alice/token', { token: alice, body: { id: 'survives' } })).body['token']);
    const wrong = await call(base, 'PUT', '/api/v1/account/password', { token: alice, body: { currentPassword: 'nope', newPassword: 'alice-pass-2' } });
    expect(wrong.status).to.equal(403);
    expect(wrong.body).to.deep.equal({ error: 'permission_denied', message: 'the current password is incorrect' });
    const short = await call(base, 'PUT', '/api/v1/account/password', { token: alice, body: { currentPassword: PASSWORDS.alice, newPassword: 'short' } });
    expect(short.body).to.deep.equal({ error: 'invalid_request', message: 'the new password must be at least 8 characters and at most 72 bytes long' });
    const ok = await call(base, 'PUT', '/api/v1/account/password', { token: alice, body: { name: 'alice', currentPassword: PASSWORDS.alice, newPassword: 'alice-pass-2' } });
    expect(ok.status).to.equal(200);
    const fresh = String(ok.body['token']);
    expect((await call(base, 'GET', '/api/v1/account/alice', { token: alice })).body).to.deep.equal({
      error: 'unauthenticated', message: "the password of account 'alice' changed after this token was issued; log in again",
    });
    expect((await call(base, 'GET', '/api/v1/account/alice', { token: fresh })).status).to.equal(200);
    expect((await call(base, 'GET', '/api/v1/account/alice', { token: apiToken })).status).to.equal(200);
    const relogin = await login(base, 'alice', 'alice-pass-2');
    expect((await call(base, 'GET', '/api/v1/account/alice', { token: relogin })).status).to.equal(200);
    const old = await call(base, 'POST', '/api/v1/session', { body: { username: 'alice', password: PASSWORDS.alice } });
    expect(old.status).to.equal(401);
    const mtime = server.services.settings.current().accounts.get('alice')?.passwordMtime?.getTime() ?? 1;
    expect(mtime % 1000).to.equal(0);
  });

  it("changes another account's password with the caller's own password and the update right", async function () {
    this.timeout(30_000);
    const denied = await call(base, 'PUT', '/api/v1/account/password', { token: bob, body: { name: 'dave', currentPassword: PASSWORDS.bob, newPassword: 'dave-pass-99' } });
    expect(denied.body).to.deep.equal({ error: 'permission_denied', message: 'permission denied: accounts, update, dave' });
    const ok = await call(base, 'PUT', '/api/v1/account/password', { token: admin, body: { name: 'bob', currentPassword: PASSWORDS.admin, newPassword: 'bob-pass-99' } });
    expect(ok.status).to.equal(200);
    expect(ok.body).to.deep.equal({});
    expect((await call(base, 'GET', '/api/v1/account/bob', { token: bob })).status).to.equal(401);
    await login(base, 'bob', 'bob-pass-99');
    expect((await call(base, 'GET', '/api/v1/account', { token: admin })).status).to.equal(200);
  });
});

describe('HTTP /api/v1/account: a password change racing logins with the old password', function () {
  cleanUpTempDirs();
  this.timeout(60_000);

  it('no session whose login checked the old password survives the change; the fresh one does', async function () {
    const dir = accountsConfigDir();
    // The hammering below can make more logins than the default bound of 50 sessions an account
    // keeps; past it the oldest end, the caller's own first, and its change would be refused (401).
    const server = await startTestServer(dir, { env: { SVC_SESSIONS_PER_ACCOUNT: '100000' } });
    try {
      const base = server.url;
      const alice = await login(base, 'alice', PASSWORDS.alice);
      const issued: string[] = [];
      let changing = true;
      // Logins that read the old hash before the change and sign after it are the ones at stake.
      async function hammer(): Promise<void> {
        while (changing) {
          const reply = await call(base, 'POST', '/api/v1/session', { body: { username: 'alice', password: PASSWORDS.alice } });
          if (reply.status === 200) issued.push(String(reply.body['token']));
        }
      }
      const hammers = [hammer(), hammer()];
      await new Promise((r) => setTimeout(r, 100));
      const changed = await call(base, 'PUT', '/api/v1/account/password', { token: alice, body: { currentPassword: PASSWORDS.alice, newPassword: 'brand-new-pass-1' } });
      changing = false;
      await Promise.all(hammers);
      expect(changed.status).to.equal(200);
      expect(issued.length).to.be.greaterThan(10);
      const replies = await Promise.all(issued.map((token) => call(base, 'GET', '/api/v1/account/alice', { token })));
      const answers = new Set(replies.map((r) => `${r.status} ${JSON.stringify(r.body)}`));
      expect([...answers]).to.deep.equal([
        `401 ${JSON.stringify({ error: 'unauthenticated', message: "the password of account 'alice' changed after this token was issued; log in again" })}`,
      ]);
      expect((await call(base, 'GET', '/api/v1/account/alice', { token: String(changed.body['token']) })).status).to.equal(200);
    } finally {
      await server.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('HTTP /api/v1/account: writes the settings would ignore are refused', function () {
  cleanUpTempDirs();
  this.timeout(30_000);
  let dir: string;
  let server: TestServer;
  let base: string;
  const tokensKey = 'accounts.alice.tokens';

  beforeEach(async function () {
    dir = accountsConfigDir();
    server = await startTestServer(dir);
    base = server.url;
  });
  afterEach(async function () {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** As an operator editing svc-secret by hand; resolves once the settings have reloaded it. */
  async function operatorSets(values: Record<string, string>): Promise<void> {
    await server.services.store.updateSecret(SETTINGS_SECRET, () => ({ set: values }));
  }
  const storedTokens = () => server.services.store.current().secrets.get(SETTINGS_SECRET)?.data[tokensKey] ?? '';
  const record = '{id: string, jti?: string, iat: number, exp?: number}';
  const refusal = (problem: string) => ({
    error: 'unavailable',
    message: `account 'alice' cannot be changed: ${problem}. Until an operator fixes that, svc keeps the last good version of the account and ignores changes to it, so nothing was written`,
  });

  async function aliceWithToken(): Promise<{ session: string; apiToken: string }> {
    const session = await login(base, 'alice', PASSWORDS.alice);
    const made = await call(base, 'POST', '/api/v1/account/alice/token', { token: session, body: { id: 'ci' } });
    expect(made.status).to.equal(200);
    return { session, apiToken: String(made.body['token']) };
  }

  it('deleting a token while a stored record does not parse: 503 naming it, nothing written, and 200 once fixed', async function () {
    const { session, apiToken } = await aliceWithToken();
    const good = storedTokens();
    const withLegacy = JSON.stringify([...(JSON.parse(good) as unknown[]), { id: 'legacy', iat: 1, exp: null }]);
    await operatorSets({ [tokensKey]: withLegacy });
    const refused = await call(base, 'DELETE', '/api/v1/account/alice/token/ci', { token: session });
    expect(refused.status).to.equal(503);
    expect(refused.body).to.deep.equal(refusal(`svc-secret: ${tokensKey}[1]: must be ${record}`));
    expect(storedTokens()).to.equal(withLegacy);
    // Honest: the token the caller wanted gone still works, and the caller was told so.
    expect((await call(base, 'GET', '/api/v1/account/alice', { token: apiToken })).status).to.equal(200);
    expect((await call(base, 'POST', '/api/v1/account/alice/token', { token: session, body: { id: 'other' } })).status).to.equal(503);

    await operatorSets({ [tokensKey]: good });
    expect((await call(base, 'DELETE', '/api/v1/account/alice/token/ci', { token: session })).status).to.equal(200);
    expect((await call(base, 'GET', '/api/v1/account/alice', { token: apiToken })).status).to.equal(401);
  });

  it('a null token record is a 503 naming it, not a 500', async function () {
    const { session } = await aliceWithToken();
    await operatorSets({ [tokensKey]: `[${storedTokens().slice(1, -1)},null]` });
    const refused = await call(base, 'DELETE', '/api/v1/account/alice/token/ci', { token: session });
    expect(refused.status).to.equal(503);
    expect(refused.body).to.deep.equal(refusal(`svc-secret: ${tokensKey}[1]: must be ${record}`));
  });

  it('deleting a token while passwordMtime is unreadable: 503 naming the key, the token keeps its record', async function () {
    const { session, apiToken } = await aliceWithToken();
    const before = storedTokens();
    await operatorSets({ 'accounts.alice.passwordMtime': 'the-day-before' });
    const refused = await call(base, 'DELETE', '/api/v1/account/alice/token/ci', { token: session });
    expect(refused.status).to.equal(503);
    expect(refused.body).to.deep.equal(refusal("svc-secret: accounts.alice.passwordMtime: 'the-day-before' is not a timestamp"));
    expect(storedTokens()).to.equal(before);
    expect((await call(base, 'GET', '/api/v1/account/alice', { token: apiToken })).status).to.equal(200);
  });

  it('a password change while the tokens do not parse: 503, and the old password still logs in', async function () {
    const { session } = await aliceWithToken();
    await operatorSets({ [tokensKey]: '[{"id":"legacy","iat":1,"exp":null}]' });
    const hashBefore = server.services.store.current().secrets.get(SETTINGS_SECRET)?.data['accounts.alice.password'];
    const refused = await call(base, 'PUT', '/api/v1/account/password', { token: session, body: { currentPassword: PASSWORDS.alice, newPassword: 'alice-pass-2' } });
    expect(refused.status).to.equal(503);
    expect(refused.body).to.deep.equal(refusal(`svc-secret: ${tokensKey}[0]: must be ${record}`));
    expect(server.services.store.current().secrets.get(SETTINGS_SECRET)?.data['accounts.alice.password']).to.equal(hashBefore);
    await login(base, 'alice', PASSWORDS.alice);
  });

  it('two password changes at once: one is made, the other answers 409 and writes nothing', async function () {
    const session = await login(base, 'alice', PASSWORDS.alice);
    const change = (newPassword: string) =>
      call(base, 'PUT', '/api/v1/account/password', { token: session, body: { currentPassword: PASSWORDS.alice, newPassword } });
    const replies = await Promise.all([change('first-new-pass'), change('second-new-pass')]);
    expect(replies.map((r) => r.status).sort()).to.deep.equal([200, 409]);
    const lost = replies.findIndex((r) => r.status === 409);
    expect(replies[lost]?.body).to.deep.equal({
      error: 'conflict',
      message: "the password of account 'alice' changed meanwhile (after the current password was checked); nothing was written: try again",
    });
    const [kept, refused] = lost === 0 ? ['second-new-pass', 'first-new-pass'] : ['first-new-pass', 'second-new-pass'];
    await login(base, 'alice', kept);
    expect((await call(base, 'POST', '/api/v1/session', { body: { username: 'alice', password: refused } })).status).to.equal(401);
  });
});
