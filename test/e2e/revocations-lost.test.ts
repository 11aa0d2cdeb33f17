/**
 * A token refused once stays refused, whatever state is lost (issue 52, finding 1): a logout
 * lives in the state backend, so when that state is gone (memory state: any restart; Redis:
 * FLUSHALL, a restart without persistence) svc refuses every session token issued before the
 * loss, says so in the log and in svc_state_revocations_lost_total, and leaves API tokens alone.
 * Real processes: svc-server on memory state, restarted; two replicas on one real Redis; the TOTP
 * test's own two replicas on a Redis of their own, run beside the others (its waits for TOTP steps).
 */
import { rm } from 'node:fs/promises';
import bcrypt from 'bcryptjs';
import { createServer, type Server } from 'node:http';
import { expect } from 'chai';
import { Redis } from 'ioredis';
import YAML from 'yaml';
import { WebSocket, WebSocketServer } from 'ws';
import { closeServer, listen } from '../extensions/helpers.js';
import { accountsConfigDir, call, editConfigMap, login, PASSWORDS, waitFor, type Reply } from '../helpers/accounts-fixture.js';
import { startRedis, type RedisPeer } from '../helpers/peers.js';
import { startReplica, stopReplica, type Replica } from '../helpers/replica-process.js';
import { cleanRedisEnv, startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';
import { CLOCK_SKEW_MS } from '../../src/session/revocations-epoch.js';
import { mintTestToken } from '../helpers/test-issuer.js';
import { enrolTotp, loginWithCode } from '../helpers/second-factor.js';
import { REUSED_SECOND_FACTOR } from '../../src/second-factor/second-step.js';
import { codeAt } from '../../src/second-factor/totp.js';

/** erin: a login account of the Redis runs that turns TOTP on (the others log in with a password alone). */
const ERIN_PASSWORD = 'erin-pass-123';
const STEP_MS = 30_000;

/** Resolves once a TOTP step begins after the one of now. */
/** Waits until the TOTP step after the one `from` (default: now) is in has begun. */
async function nextStep(from = Date.now()): Promise<void> {
  await new Promise((r) => setTimeout(r, Math.max(0, (Math.floor(from / STEP_MS) + 1) * STEP_MS - Date.now() + 50)));
}

const LOST = /^the record of revocations was lost at (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z); log in again$/;
const REVOKED = 'token is revoked; log in again';

/** A route for any caller (userinfo answers anyone, with or without a valid token). */
const whoAmI = (base: string, token: string): Promise<Reply> => call(base, 'GET', '/api/v1/account/can-i/accounts/get/alice', { token });

/** The 401's message, or the status when the token was not refused. */
async function refusal(base: string, token: string): Promise<string> {
  const reply = await whoAmI(base, token);
  return reply.status === 401 ? String(reply.body['message']) : `answered ${reply.status}`;
}

async function apiToken(base: string, id = `ci-${Date.now()}`): Promise<string> {
  const session = await login(base, 'alice', PASSWORDS.alice);
  const made = await call(base, 'POST', '/api/v1/account/alice/token', { token: session, body: { id, expiresIn: '1h' } });
  expect(made.status, JSON.stringify(made.body)).to.equal(200);
  return String(made.body['token']);
}

/** Resolves once a new second has begun: the tokens issued until now carry an earlier `iat`. */
async function nextSecond(): Promise<void> {
  await new Promise((r) => setTimeout(r, 1_000 - (Date.now() % 1_000) + 20));
}

/** Resolves once the whole second of `iso` and the clock margin after it (CLOCK_SKEW_MS) are over. */
async function afterSecondOf(iso: string): Promise<void> {
  const wait = (Math.floor((Date.parse(iso) + CLOCK_SKEW_MS) / 1000) + 1) * 1000 - Date.now();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
}

async function metric(base: string, name: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const value = new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1];
  if (value === undefined) throw new Error(`${name} is not in /metrics`);
  return Number(value);
}

async function lostCounts(replicas: readonly Replica[]): Promise<number[]> {
  return Promise.all(replicas.map((replica) => metric(replica.url, 'svc_state_revocations_lost_total')));
}

/**
 * The TOTP test, on a Redis, two replicas and a config dir of its own: its FLUSHALL is then its
 * own loss alone, so it runs from the file's start beside the other tests while it waits for
 * real TOTP steps (up to two, about a minute), and its test awaits it.
 */
async function totpCodeAcrossFlushall(): Promise<void> {
  const redis = await startRedis();
  const raw = new Redis(redis.url, { maxRetriesPerRequest: 1, lazyConnect: true });
  const dir = accountsConfigDir({ secret: { 'accounts.erin.password': bcrypt.hashSync(ERIN_PASSWORD, 4) } });
  editConfigMap(dir, (text) => `${text}  accounts.erin: login\n`);
  const started = await Promise.allSettled([startReplica(dir, redis.url), startReplica(dir, redis.url)]);
  const replicas = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  try {
    const [a, b] = replicas;
    if (a === undefined || b === undefined) throw (started.find((s) => s.status === 'rejected') as PromiseRejectedResult).reason;
    // The replicas' first start wrote the marker of the record's beginning: a code first accepted after it.
    await nextStep(Date.now() + CLOCK_SKEW_MS);
    const erin = await enrolTotp(a.url, 'erin', ERIN_PASSWORD, Date.now);
    // The enrolment used this step's code: the next step's, early, by the skew an authenticator
    // ahead is allowed (a code so used before the loss must be refused after it too).
    const code = codeAt(erin.secret, Date.now() + STEP_MS);
    const used = await loginWithCode(a.url, 'erin', ERIN_PASSWORD, code);
    expect(used.status, JSON.stringify(used.body)).to.equal(200);
    const counts = await lostCounts([a, b]);
    await new Promise((r) => setTimeout(r, 1_100));
    await raw.flushall();
    await waitFor(async () => (await lostCounts([a, b])).every((n, i) => n > (counts[i] ?? 0)), 'both replicas to find the loss', 15_000);
    // The record of used steps began at the loss (and the clock margin after it) at the latest.
    const begun = Date.now() + CLOCK_SKEW_MS;
    for (const replica of [b, a]) {
      const again = await loginWithCode(replica.url, 'erin', ERIN_PASSWORD, code);
      expect([again.status, again.body['message']], `the same code on a replica after the loss: ${JSON.stringify(again.body)}`).to.deep.equal([401, REUSED_SECOND_FACTOR]);
    }
    // A code first accepted after that: the next step's, early, once the step after `begun` has begun.
    await nextStep(begun);
    const next = await loginWithCode(b.url, 'erin', ERIN_PASSWORD, codeAt(erin.secret, Date.now() + STEP_MS));
    expect(next.status, JSON.stringify(next.body)).to.equal(200);
  } finally {
    await Promise.all(replicas.map(stopReplica));
    raw.disconnect();
    await redis.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

describe('revocations lost with the state: session tokens of before are refused (e2e)', function () {
  cleanUpTempDirs();
  this.timeout(120_000);
  let totp: Promise<void> | undefined;
  before(() => {
    totp = totpCodeAcrossFlushall();
    totp.catch(() => undefined); // its test reports the failure
  });
  after(async () => {
    await totp?.catch(() => undefined); // it stops its own peers when it ends
  });

  describe('memory state, svc restarted', () => {
    let dir: string;
    let server: ServerProcess | undefined;
    before(() => {
      dir = accountsConfigDir();
    });
    after(async () => {
      await server?.stop();
      await rm(dir, { recursive: true, force: true });
    });

    it('keeps a logged-out token refused, refuses every session of before with the reason, and keeps API tokens', async () => {
      server = await startServerProcess(dir, 1, cleanRedisEnv({}));
      const loggedOut = await login(server.url, 'alice', PASSWORDS.alice);
      const kept = await login(server.url, 'bob', PASSWORDS.bob);
      const key = await apiToken(server.url);
      expect((await call(server.url, 'DELETE', '/api/v1/session', { token: loggedOut })).status).to.equal(200);
      expect(await refusal(server.url, loggedOut)).to.equal(REVOKED);
      expect((await whoAmI(server.url, kept)).status).to.equal(200);

      await server.stop();
      server = await startServerProcess(dir, 1, cleanRedisEnv({}));

      const gone = await refusal(server.url, loggedOut);
      expect(gone, `the logged-out token after the restart: ${server.logTail()}`).to.match(LOST);
      expect(await refusal(server.url, kept), 'a session of before the restart').to.equal(gone);
      const since = Date.parse(LOST.exec(gone)?.[1] ?? '');
      expect(Date.now() - since, 'the cutoff is this start').to.be.within(0, 60_000);
      const fresh = await login(server.url, 'bob', PASSWORDS.bob);
      expect((await whoAmI(server.url, fresh)).status).to.equal(200);
      expect((await whoAmI(server.url, key)).status, 'an API token lives in the config store').to.equal(200);
      expect(await metric(server.url, 'svc_state_revocations_lost_total')).to.equal(1);
      expect(await metric(server.url, 'svc_session_tokens_not_before_seconds')).to.equal(since / 1000);
      expect(server.logTail()).to.include(`every session and workload token issued before this start (${new Date(since).toISOString()}) is refused`);
    });

    it('an API token logged out with DELETE /api/v1/session stays refused after the restart: the logout deleted its record from svc-secret', async () => {
      server ??= await startServerProcess(dir, 1, cleanRedisEnv({}));
      const id = 'logged-out';
      const key = await apiToken(server.url, id);
      const kept = await apiToken(server.url, 'kept');
      const out = await call(server.url, 'DELETE', '/api/v1/session', { token: key });
      expect(out.status, JSON.stringify(out.body)).to.equal(200);
      const gone = await refusal(server.url, key);
      expect(gone).to.equal(`this API token of account 'alice' was deleted`);
      const admin = await login(server.url, 'admin', PASSWORDS.admin);
      const account = await call(server.url, 'GET', '/api/v1/account/alice', { token: admin });
      expect(JSON.stringify(account.body), 'svc account get no longer lists it').to.not.include(`"${id}"`);

      await server.stop();
      server = await startServerProcess(dir, 1, cleanRedisEnv({}));
      expect(await refusal(server.url, key), 'after the restart: memory state kept nothing, the store did').to.not.equal('answered 200');
      expect((await whoAmI(server.url, kept)).status, 'another API token').to.equal(200);
    });

    it('an API token refused because its account was disabled stays refused after the restart: the disable deleted its record from svc-secret', async () => {
      server ??= await startServerProcess(dir, 1, cleanRedisEnv({}));
      const admin = await login(server.url, 'admin', PASSWORDS.admin);
      const made = await call(server.url, 'POST', '/api/v1/account/alice/token', { token: admin, body: { id: 'before-disable' } });
      expect(made.status, JSON.stringify(made.body)).to.equal(200);
      const key = String(made.body['token']);
      expect((await call(server.url, 'GET', '/api/v1/account', { token: key })).status).to.equal(200);

      editConfigMap(dir, (text) => `${text}  accounts.alice.enabled: "false"\n`);
      await waitFor(async () => (await call(server!.url, 'GET', '/api/v1/account', { token: key })).status === 401, 'alice disabled');
      editConfigMap(dir, (text) => text.replace('  accounts.alice.enabled: "false"\n', ''));
      await waitFor(async () => (await login(server!.url, 'alice', PASSWORDS.alice).then(() => true, () => false)), 'alice enabled again');
      expect((await call(server.url, 'GET', '/api/v1/account', { token: key })).status, 'enabled again: still refused').to.equal(401);
      const log = server.logTail();

      await server.stop();
      server = await startServerProcess(dir, 1, cleanRedisEnv({}));
      const after = await call(server.url, 'GET', '/api/v1/account', { token: key });
      expect(after.status, `after the restart (memory state lost the record of the disable): ${JSON.stringify(after.body)}`).to.equal(401);
      expect(after.body['message']).to.equal(`this API token of account 'alice' was deleted`);
      const admin2 = await login(server.url, 'admin', PASSWORDS.admin);
      expect(JSON.stringify((await call(server.url, 'GET', '/api/v1/account/alice', { token: admin2 })).body), 'svc account get no longer lists it').to.not.include('"before-disable"');
      const deleted = log.split('\n').find((line) => line.includes('"action":"token-deleted"') && line.includes('"tokenId":"before-disable"'));
      expect(deleted, 'the audit event of the deletion').to.be.a('string').and.to.include('"reason":"account-disabled: the account was disabled"');
      const fresh = await call(server.url, 'POST', '/api/v1/account/alice/token', { token: admin2, body: { id: 'after-enable' } });
      expect((await call(server.url, 'GET', '/api/v1/account', { token: String(fresh.body['token']) })).status, 'a token made after the enable').to.equal(200);
    });
  });

  describe('two replicas on one Redis that loses its data', () => {
    let redis: RedisPeer;
    let raw: Redis;
    let dir: string;
    let a: Replica;
    let b: Replica;
    let backend: Server;
    let wss: WebSocketServer;
    before(async function () {
      redis = await startRedis();
      raw = new Redis(redis.url, { maxRetriesPerRequest: 1, lazyConnect: true });
      raw.on('error', () => undefined); // Redis is restarted under it
      // A WebSocket echo behind the extension `live`, which bob may use.
      backend = createServer((_req, res) => res.writeHead(426).end());
      wss = new WebSocketServer({ noServer: true });
      backend.on('upgrade', (req, socket, head) => wss.handleUpgrade(req, socket, head, (ws) => ws.on('message', (data) => ws.send(String(data)))));
      const { url } = await listen(backend);
      dir = accountsConfigDir({
        cm: { 'extension.config': YAML.stringify({ extensions: [{ name: 'live', enabled: true, backend: { services: [{ url }] } }] }) },
        rbac: { 'policy.csv': 'p, bob, extensions, *, */live, allow\n' },
      });
      [a, b] = await Promise.all([startReplica(dir, redis.url), startReplica(dir, redis.url)]);
    });
    after(async () => {
      await Promise.all([stopReplica(a), stopReplica(b)]);
      raw?.disconnect();
      wss?.close();
      if (backend !== undefined) await closeServer(backend);
      await redis?.stop();
      await rm(dir, { recursive: true, force: true });
    });

    /** Resolves once a login is after the cutoff both replicas hold: its second and the clock margin over. */
    async function afterCutoffs(): Promise<void> {
      const cutoffs = await Promise.all([a, b].map((replica) => metric(replica.url, 'svc_session_tokens_not_before_seconds')));
      await afterSecondOf(new Date(Math.max(...cutoffs) * 1000).toISOString());
    }

    /** Waits until both replicas refuse `token` as lost after `notBeforeMs`; the message they give. */
    async function refusedAsLost(token: string, notBeforeMs: number): Promise<string> {
      let seen: string[] = [];
      await waitFor(async () => {
        seen = [await refusal(a.url, token), await refusal(b.url, token)];
        return seen.every((m) => LOST.test(m) && Date.parse(LOST.exec(m)?.[1] ?? '') >= notBeforeMs);
      }, 'both replicas to refuse a session of before the loss', 15_000).catch((err: unknown) => {
        throw new Error(`${String(err)}: ${JSON.stringify(seen)}\n${a.logSince(0)}\n${b.logSince(0)}`);
      });
      expect(seen[0], 'both replicas give the same cutoff').to.equal(seen[1]);
      return seen[0] as string;
    }

    it('FLUSHALL: the token logged out on one replica stays refused on both, and so is every other session of before; said in the log and the metric', async () => {
      const loggedOut = await login(a.url, 'alice', PASSWORDS.alice);
      const kept = await login(b.url, 'bob', PASSWORDS.bob);
      const sso = await mintTestToken('sso-user', ['sso-team']);
      const key = await apiToken(a.url);
      for (const replica of [a, b]) expect((await whoAmI(replica.url, sso)).status).to.equal(200);
      expect((await call(a.url, 'DELETE', '/api/v1/session', { token: loggedOut })).status).to.equal(200);
      await waitFor(async () => (await refusal(b.url, loggedOut)) === REVOKED, 'the logout on b');
      const ws = new WebSocket(`${a.url.replace('http', 'ws')}/api/v1/extensions/live/echo`, { headers: { authorization: `Bearer ${kept}` } });
      await new Promise((resolve, reject) => {
        ws.once('open', resolve);
        ws.once('unexpected-response', (_req, res) => reject(new Error(`status ${String(res.statusCode)}`)));
        ws.once('error', reject);
      });
      const cut = new Promise<number>((resolve) => ws.once('close', resolve));
      const counts = await lostCounts([a, b]);
      const marks = [a.logMark(), b.logMark()];
      await nextSecond(); // the cutoff comes after these tokens' iat

      const flushedAt = Date.now();
      await raw.flushall();
      const message = await refusedAsLost(kept, flushedAt);
      const stillOpen = new Promise<string>((resolve) => setTimeout(() => resolve('still open after 5 s'), 5_000).unref());
      expect(await Promise.race([cut, stillOpen]), 'the WebSocket a session of before keeps open is cut').to.equal(1006);
      for (const replica of [a, b]) {
        expect(await refusal(replica.url, loggedOut), 'the logged-out token: still in the replica\'s copy, or lost').to.be.oneOf([REVOKED, message]);
        expect(await refusal(replica.url, sso), 'an SSO token of before').to.equal(message);
        expect((await whoAmI(replica.url, key)).status, 'an API token').to.equal(200);
      }
      expect(await lostCounts([a, b]), 'each replica counted the loss once').to.deep.equal(counts.map((n) => n + 1));
      const at = LOST.exec(message)?.[1] ?? '';
      for (const [replica, mark] of [[a, marks[0]], [b, marks[1]]] as const) {
        expect(replica.logSince(mark ?? 0)).to.include(`the record of revocations in Redis was lost (its marker revocations-epoch is gone: a first start, FLUSHALL, a restart without persistence, or an eviction), so every session and workload token issued before ${at} (and up to 2000 ms after, for other replicas' clocks) is refused`);
        expect(await metric(replica.url, 'svc_session_tokens_not_before_seconds')).to.equal(Date.parse(at) / 1000);
      }
      await afterSecondOf(at); // a login in the cutoff's own second and the clock margin is refused too (before or after the loss cannot be told)
      const fresh = await login(b.url, 'bob', PASSWORDS.bob);
      for (const replica of [a, b]) expect((await whoAmI(replica.url, fresh)).status).to.equal(200);

      // A replica started after the loss never knew the logout: the cutoff alone refuses the token.
      await stopReplica(b);
      b = await startReplica(dir, redis.url);
      expect(await refusal(b.url, loggedOut), 'the logged-out token on a replica started after the loss').to.equal(message);
      expect(await refusal(b.url, kept)).to.equal(message);
      expect((await whoAmI(b.url, fresh)).status).to.equal(200);
      expect((await whoAmI(b.url, key)).status).to.equal(200);
    });

    it('the revocation list evicted alone (its hash and keys deleted): a restarted replica still refuses the logged-out token, since the marker went with the list', async () => {
      await afterCutoffs();
      const loggedOut = await login(a.url, 'alice', PASSWORDS.alice);
      expect((await call(a.url, 'DELETE', '/api/v1/session', { token: loggedOut })).status).to.equal(200);
      expect(await refusal(a.url, loggedOut)).to.equal(REVOKED);
      const keys = await raw.keys('svc:revoked-token*');
      expect(keys, 'the list\'s hash and its per-token keys').to.include('svc:revoked-tokens');
      await raw.del(...keys);
      await stopReplica(b);
      b = await startReplica(dir, redis.url);
      const answer = await refusal(b.url, loggedOut);
      expect(answer, `the logged-out token on the restarted replica: ${b.logSince(0)}`).to.match(LOST);
      const at = LOST.exec(answer)?.[1] ?? '';
      expect(await refusal(a.url, loggedOut), 'on the replica that kept its copy').to.be.oneOf([REVOKED, answer]);
      await afterSecondOf(at);
    });

    it('a replica started while Redis is down has read no revocation: it refuses the tokens issued before it started, says so, and serves its own logins', async () => {
      await afterCutoffs();
      const loggedOut = await login(a.url, 'alice', PASSWORDS.alice);
      const other = await login(a.url, 'bob', PASSWORDS.bob);
      const key = await apiToken(a.url);
      expect((await call(a.url, 'DELETE', '/api/v1/session', { token: loggedOut })).status).to.equal(200);
      expect(await refusal(a.url, loggedOut)).to.equal(REVOKED);
      const cutoffs = async () => [await metric(a.url, 'svc_session_tokens_not_before_seconds'), await metric(b.url, 'svc_session_tokens_not_before_seconds')];
      const known = await cutoffs();
      await redis.stop();
      const late = await startReplica(dir, redis.url);
      try {
        const unread = /^this server has not read the record of revocations since it started at (\S+) \(the state backend does not answer\), so tokens issued before then are refused; log in again$/;
        expect(await refusal(late.url, loggedOut), `the token logged out before it started: ${late.logSince(0)}`).to.match(unread);
        expect(await refusal(late.url, other), 'any session of before: it cannot tell which were revoked').to.match(unread);
        expect((await whoAmI(late.url, key)).status, 'an API token lives in the config store').to.equal(200);
        expect(late.logSince(0)).to.include('revocations: the state backend does not answer, so this process has not read the record of revocations: until it has, every session, SSO and workload token issued before it started');
        const fresh = await login(late.url, 'bob', PASSWORDS.bob);
        expect((await whoAmI(late.url, fresh)).status, 'a login on it since').to.equal(200);
      } finally {
        await stopReplica(late);
        await redis.restart();
      }
      // The restart emptied Redis: the next test starts once both replicas took the loss and its margin is over.
      let moved: number[] = [];
      await waitFor(async () => (moved = await cutoffs()).every((t, i) => t > (known[i] ?? 0)), 'both replicas to find the emptied Redis', 15_000);
      await afterSecondOf(new Date(Math.max(...moved) * 1000).toISOString());
    });

    it('Redis restarted without persistence: the sessions of before are refused on both replicas once they reconnect', async () => {
      await afterCutoffs();
      const before = await login(a.url, 'bob', PASSWORDS.bob);
      const loggedOut = await login(b.url, 'alice', PASSWORDS.alice);
      expect((await call(b.url, 'DELETE', '/api/v1/session', { token: loggedOut })).status).to.equal(200);
      const key = await apiToken(b.url);
      for (const replica of [a, b]) expect((await whoAmI(replica.url, before)).status).to.equal(200);
      const counts = await lostCounts([a, b]);
      await nextSecond(); // the cutoff comes after these tokens' iat

      const restartedAt = Date.now();
      await redis.restart();
      const message = await refusedAsLost(before, restartedAt);
      for (const replica of [a, b]) {
        expect(await refusal(replica.url, loggedOut)).to.be.oneOf([REVOKED, message]);
        expect((await whoAmI(replica.url, key)).status).to.equal(200);
      }
      expect(await lostCounts([a, b])).to.deep.equal(counts.map((n) => n + 1));
      await afterSecondOf(LOST.exec(message)?.[1] ?? '');
      const fresh = await login(a.url, 'alice', PASSWORDS.alice);
      for (const replica of [a, b]) expect((await whoAmI(replica.url, fresh)).status).to.equal(200);
    });

    it('FLUSHALL: a TOTP code used before is refused after it (its use was lost with the state), and the next step\'s code is accepted', async function () {
      this.timeout(120_000);
      await totp; // begun with the file, on its own Redis and replicas (totpCodeAcrossFlushall)
    });
  });
});
