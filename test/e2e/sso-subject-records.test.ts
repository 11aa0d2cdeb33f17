/**
 * An SSO user whose `sub` is a local account's name never shares that account's records (issue
 * 51, finding 4), on two replica processes sharing one Redis: tokens of the tests' registered
 * SSO issuer (test-issuer.ts; an SSO principal as an `oidc.config` ID token gives) with
 * `sub: alice` neither list, end nor push out the local account alice's sessions, nor spend her
 * extension rate-limit bucket.
 */
import { rm } from 'node:fs/promises';
import { expect } from 'chai';
import YAML from 'yaml';
import { echoBackend, type Backend } from '../extensions/helpers.js';
import { accountsConfigDir, call, login, PASSWORDS, type Reply } from '../helpers/accounts-fixture.js';
import { startRedis, type RedisPeer } from '../helpers/peers.js';
import { startReplica, stopReplica, type Replica } from '../helpers/replica-process.js';
import { mintTestToken, SSO_POLICY } from '../helpers/test-issuer.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

/** Small, so that pushing a person's sessions out takes a few logins rather than 51. */
const BOUND = 3;
const BURST = 5;

describe('e2e: an SSO subject never shares a local account\'s records, on two replicas', function () {
  cleanUpTempDirs();
  this.timeout(60_000);
  let redis: RedisPeer;
  let dir: string;
  let a: Replica;
  let b: Replica;
  let echo: Backend;

  before(async function () {
    redis = await startRedis();
    echo = await echoBackend('echo');
    const extensions = [{ name: 'echo', enabled: true, backend: { rateLimit: { requestsPerSecond: 0.05, burst: BURST }, services: [{ url: echo.url }] } }];
    dir = accountsConfigDir({
      cm: { 'extension.config': YAML.stringify({ extensions }) },
      rbac: { 'policy.csv': `p, alice, extensions, *, */echo, allow\n${SSO_POLICY}` },
    });
    const env = { SVC_SESSIONS_PER_ACCOUNT: String(BOUND) };
    [a, b] = await Promise.all([startReplica(dir, redis.url, env), startReplica(dir, redis.url, env)]);
  });
  after(async function () {
    await Promise.all([stopReplica(a), stopReplica(b)]);
    await redis?.stop();
    await echo?.close();
    await rm(dir, { recursive: true, force: true });
  });

  const sessions = async (url: string, token: string, query = ''): Promise<Reply> => call(url, 'GET', `/api/v1/session/list${query}`, { token });
  const ids = (reply: Reply): string[] => ((reply.body['items'] ?? []) as { id: string }[]).map((s) => s.id);

  /** A local alice login and its session id, as alice lists it. */
  async function localSession(): Promise<{ token: string; id: string }> {
    const token = await login(a.url, 'alice', PASSWORDS.alice);
    const mine = await eventually(() => sessions(b.url, token), (r) => ((r.body['items'] ?? []) as { current: boolean }[]).some((s) => s.current));
    const id = ((mine.body['items'] as { id: string; current: boolean }[]).find((s) => s.current))?.id ?? '';
    return { token, id };
  }

  /** An SSO login of `sub: alice`, used once on `replica` (a session first seen in use is recorded). */
  async function ssoAlice(replica: Replica): Promise<string> {
    const token = await mintTestToken('alice', ['sso-team']);
    expect((await call(replica.url, 'GET', '/api/v1/session/userinfo', { token })).body['username']).to.equal('alice');
    return token;
  }

  it('an SSO user with sub alice neither lists nor ends local alice\'s sessions', async function () {
    const local = await localSession();
    const sso = await ssoAlice(b);
    for (const replica of [a, b]) {
      const own = await eventually(() => sessions(replica.url, sso), (r) => ids(r).length === 1);
      expect(ids(own), 'the SSO user\'s list').to.not.include(local.id);
      expect((own.body['items'] as { current: boolean }[])[0]?.current).to.equal(true);
      const named = await sessions(replica.url, sso, '?account=alice');
      expect(named.status, 'alice names the local account').to.equal(403);
      expect(named.body['message']).to.equal('permission denied: accounts, update, alice');
    }
    const ended = await call(a.url, 'DELETE', `/api/v1/session/${encodeURIComponent(local.id)}`, { token: sso });
    expect(ended.status).to.equal(404);
    expect(ended.body['message']).to.equal(`no session '${local.id}' of 'alice'`);
    for (const replica of [a, b]) expect((await call(replica.url, 'GET', '/api/v1/account/alice', { token: local.token })).status).to.equal(200);
    expect(ids(await sessions(a.url, local.token))).to.include(local.id);
  });

  it('an SSO user with sub alice logging in past the bound pushes none of local alice\'s sessions out', async function () {
    const local = await localSession();
    const logins: string[] = [];
    for (let i = 0; i < BOUND + 2; i++) logins.push(await ssoAlice(i % 2 === 0 ? a : b));
    const last = logins[logins.length - 1] ?? '';
    // The SSO user's own bound holds: their oldest sessions end.
    await eventually(() => call(a.url, 'GET', '/api/v1/session/userinfo', { token: logins[0] ?? '' }), (r) => r.body['loggedIn'] === false);
    // A session first seen in use is recorded without holding up its request (session-usage.ts),
    // so the last login's record, and the end of the oldest it causes, may still be on the way.
    const kept = await eventually(() => sessions(b.url, last), (r) => ids(r).length <= BOUND);
    expect(ids(kept)).to.have.length(BOUND);
    for (const replica of [a, b]) expect((await call(replica.url, 'GET', '/api/v1/account/alice', { token: local.token })).status, 'local alice still logged in').to.equal(200);
    expect(ids(await sessions(b.url, local.token))).to.include(local.id);
  });

  it('an SSO user with sub alice spending the extension\'s bucket leaves local alice\'s full', async function () {
    const local = await login(a.url, 'alice', PASSWORDS.alice);
    const sso = await mintTestToken('alice', ['sso-team']);
    const statuses: number[] = [];
    for (let i = 0; i < 2 * BURST; i++) statuses.push((await call(i % 2 === 0 ? a.url : b.url, 'GET', '/api/v1/extensions/echo/x', { token: sso })).status);
    expect(statuses, 'the SSO user reached the limit').to.include(429);
    for (const replica of [a, b]) expect((await call(replica.url, 'GET', '/api/v1/extensions/echo/x', { token: local })).status, 'local alice').to.equal(200);
  });
});

async function eventually(probe: () => Promise<Reply>, done: (r: Reply) => boolean): Promise<Reply> {
  let last: Reply | undefined;
  for (let i = 0; i < 50; i++) {
    last = await probe();
    if (done(last)) return last;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`never done; last: ${last?.status} ${JSON.stringify(last?.body)}`);
}
