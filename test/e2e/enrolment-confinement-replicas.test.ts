/**
 * A session confined to enrolment (users.mfa.required, no factor yet) reaches only the routes
 * declared for it, in any spelling of any path, on either of two replicas sharing Redis: the
 * gate decides on the route the router matched, and the routers match one spelling only.
 * Before route declarations, `/API/v1/…` passed a gate that read the path as typed while the
 * router matched it case-insensitively, and `/api/v1/session/list?account=` was open as a prefix.
 */
import { rm } from 'node:fs/promises';
import { expect } from 'chai';
import { accountsConfigDir, call, login, PASSWORDS } from '../helpers/accounts-fixture.js';
import { startRedis, type RedisPeer } from '../helpers/peers.js';
import { startReplica, stopReplica, type Replica } from '../helpers/replica-process.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const CONFINED = 'second_factor_enrolment_required';

describe('a confined session on two replicas', function () {
  cleanUpTempDirs();
  this.timeout(60_000);
  let redis: RedisPeer;
  let dir: string;
  let a: Replica;
  let b: Replica;

  before(async function () {
    redis = await startRedis();
    dir = accountsConfigDir({ cm: { 'users.mfa.required': 'true' } });
    [a, b] = await Promise.all([startReplica(dir, redis.url), startReplica(dir, redis.url)]);
  });
  after(async function () {
    await Promise.all([stopReplica(a), stopReplica(b)]);
    await redis?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('cannot make itself an API token in any spelling of the path, on either replica', async function () {
    const alice = await login(a.url, 'alice', PASSWORDS.alice);
    for (const replica of [a, b]) {
      for (const path of ['/api/v1/account/alice/token', '/API/v1/account/alice/token', '/Api/V1/Account/alice/token', '/api/v1/account/alice/token/', '/API/V1/ACCOUNT/ALICE/TOKEN']) {
        const reply = await call(replica.url, 'POST', path, { token: alice, body: {} });
        expect(reply.status, path).to.be.oneOf([403, 404]);
        expect(reply.body['token'], path).to.equal(undefined);
        if (path.startsWith('/api/')) expect(reply.body['error'], path).to.equal(CONFINED);
      }
    }
  });

  it('gives a confined admin no admin right in any spelling: accounts, and other accounts\' sessions', async function () {
    const bob = await login(b.url, 'bob', PASSWORDS.bob);
    const admin = await login(a.url, 'admin', PASSWORDS.admin);
    const tries: readonly (readonly [string, string])[] = [
      ['GET', '/API/v1/account/bob'],
      ['GET', '/api/v1/account/bob'],
      ['GET', '/api/V1/account'],
      ['GET', '/api/v1/session/list?account=bob'],
      ['GET', '/API/v1/session/list?account=bob'],
      ['GET', '/api/v1/session/list'],
    ];
    for (const replica of [a, b]) {
      for (const [method, path] of tries) {
        const reply = await call(replica.url, method, path, { token: admin });
        expect(reply.status, `${method} ${path}`).to.be.oneOf([403, 404]);
        expect(reply.body['items'], `${method} ${path}`).to.equal(undefined);
        expect(reply.body['name'], `${method} ${path}`).to.equal(undefined);
      }
    }
    // bob's sessions cannot be ended by the confined admin: bob's token still works.
    const ended = await call(b.url, 'DELETE', '/api/v1/session/anything?account=bob', { token: admin });
    expect(ended.status).to.equal(403);
    expect(ended.body['error']).to.equal(CONFINED);
    expect((await call(a.url, 'GET', '/api/v1/session/userinfo', { token: bob })).body).to.deep.include({ loggedIn: true, username: 'bob' });
  });

  it('still reaches what is declared for it: its factor, its userinfo, its logout', async function () {
    const carolLike = await login(a.url, 'bob', PASSWORDS.bob);
    const status = await call(b.url, 'GET', '/api/v1/account/second-factor', { token: carolLike });
    expect(status.status).to.equal(200);
    expect(status.body).to.deep.include({ required: true });
    expect((await call(b.url, 'GET', '/api/v1/session/userinfo', { token: carolLike })).body).to.deep.include({ loggedIn: true });
    expect((await call(a.url, 'DELETE', '/api/v1/session', { token: carolLike })).status).to.equal(200);
    expect((await call(b.url, 'GET', '/api/v1/session/userinfo', { token: carolLike })).body).to.deep.equal({ loggedIn: false });
  });
});
