/**
 * The identity provider when its state backend does not answer (src/idp/storage/storage-unavailable.ts):
 * 503 temporarily_unavailable, never oidc-provider's 500 server_error, and nothing granted.
 * Found by the authorization-request flood on Redis under load: a command timeout in the
 * adapter's upsert answered 500.
 * And a login page whose last step cannot be stored: answered with the error page, not left
 * without an answer (found in the soak: a password form posted during a Redis failover got no
 * answer until the client gave up).
 */
import { createHash } from 'node:crypto';
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { createStateAdapterClass } from '../../../src/idp/storage/adapter.js';
import { answeringUnavailable, STORAGE_UNAVAILABLE } from '../../../src/idp/storage/storage-unavailable.js';
import { createRedisState } from '../../../src/state/redis.js';
import { SECRET_KEY } from '../../helpers/accounts-fixture.js';
import { fakePasswordConnector } from '../../helpers/fake-password-connector.js';
import { FormBrowser, isPage } from '../../helpers/form-browser.js';
import { startPasswordIdpSvc } from '../../helpers/idp-svc.js';
import { startRedis, type RedisPeer } from '../../helpers/peers.js';
import { cleanUpTempDirs } from '../../helpers/temp-dir.js';

describe('idp: a state backend that does not answer', function () {
  cleanUpTempDirs();
  this.timeout(60_000);
  let redis: RedisPeer;

  beforeEach(async function () {
    redis = await startRedis();
  });

  afterEach(async function () {
    await redis?.stop();
  });

  it('the adapter answers temporarily_unavailable (503) for every method, where the bare one throws StateUnavailable', async function () {
    const state = createRedisState({ url: redis.url, log: pino({ level: 'silent' }) });
    try {
      await state.set('warm', '1');
      await redis.stop();
      const Bare = createStateAdapterClass(state, { serverSecretKey: SECRET_KEY });
      const Answering = answeringUnavailable(Bare);
      const bare = await new Bare('Interaction').find('an-interaction-id').then(() => undefined, (err: unknown) => err);
      expect((bare as Error).name).to.equal('StateUnavailable');
      const adapter = new Answering('Interaction');
      const calls: [string, () => Promise<unknown>][] = [
        ['upsert', () => adapter.upsert('an-interaction-id', { uid: 'u' }, 60) as Promise<unknown>],
        ['find', () => adapter.find('an-interaction-id') as Promise<unknown>],
        ['findByUid', () => adapter.findByUid('u') as Promise<unknown>],
        ['destroy', () => adapter.destroy('an-interaction-id') as Promise<unknown>],
      ];
      for (const [name, call] of calls) {
        const err = (await call().then(() => undefined, (e: unknown) => e)) as { error?: string; status?: number; error_description?: string; cause?: unknown } | undefined;
        expect(err?.error, name).to.equal('temporarily_unavailable');
        expect(err?.status, name).to.equal(503);
        expect(err?.error_description, name).to.equal(STORAGE_UNAVAILABLE);
        expect((err?.cause as Error | undefined)?.name, name).to.equal('StateUnavailable');
      }
    } finally {
      await state.close();
    }
  });

  it('an authorization request with Redis down goes back to the client with temporarily_unavailable, not a 500 page', async function () {
    const { url, server } = await startPasswordIdpSvc(fakePasswordConnector({}), { secretKey: SECRET_KEY, redisUrl: redis.url });
    try {
      await redis.stop();
      const challenge = createHash('sha256').update('v'.repeat(43)).digest('base64url');
      const query = new URLSearchParams({ client_id: 'svc-cli', redirect_uri: 'http://127.0.0.1/auth/callback', response_type: 'code', scope: 'openid', code_challenge: challenge, code_challenge_method: 'S256', state: 's' });
      const res = await fetch(`${url}/api/idp/auth?${query}`, { redirect: 'manual' });
      const text = await res.text();
      // Back to the client with the OAuth error, as a refusal of the pending bound is.
      expect(res.status, text.slice(0, 300)).to.equal(303);
      const location = new URL(res.headers.get('location') ?? 'http://none/');
      expect(location.searchParams.get('error')).to.equal('temporarily_unavailable');
      expect(location.searchParams.get('error_description')).to.equal(STORAGE_UNAVAILABLE);
      expect(location.searchParams.has('code')).to.equal(false);
      expect(server.logs()).to.not.contain('"msg":"identity provider error"');
    } finally {
      await server.close();
    }
  });

  /**
   * Redis patterns for every key but those starting with `prefix`: one per character of the
   * prefix, "the same up to here, then another character". Redis ACLs only allow, so a denial is
   * everything else allowed.
   */
  function allBut(prefix: string): string[] {
    return [...prefix].map((c, i) => `%W~${prefix.slice(0, i)}[^${c}]*`);
  }

  it('a password login whose finish cannot be stored gets the error page at once, not an answer that never comes', async function () {
    const raw = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    const connector = fakePasswordConnector({ ann: { password: 'ann-password', identity: { userId: 'ann', username: 'ann', emailVerified: true, groups: [] } } });
    const login = connector.login.bind(connector);
    let refused = false;
    // Once the directory has said yes, Redis refuses every write to an interaction (the record
    // the provider saves when it finishes the login) and nothing else: the account record and
    // the throttle's success still land, so the failure is the finish's alone.
    connector.login = async (username, password, ctx) => {
      const identity = await login(username, password, ctx);
      await raw.call('ACL', 'SETUSER', 'default', 'resetkeys', '%R~*', ...allBut('svc:idp:Interaction:'));
      refused = true;
      return identity;
    };
    const { url, server } = await startPasswordIdpSvc(connector, { secretKey: SECRET_KEY, redisUrl: redis.url });
    try {
      const challenge = createHash('sha256').update('v'.repeat(43)).digest('base64url');
      const query = new URLSearchParams({ client_id: 'svc-cli', redirect_uri: 'http://127.0.0.1/auth/callback', response_type: 'code', scope: 'openid', code_challenge: challenge, code_challenge_method: 'S256', state: 's' });
      const browser = new FormBrowser((input, init) => fetch(input, { ...init, signal: AbortSignal.timeout(10_000) }));
      const form = await browser.go(`${url}/api/idp/auth?${query}`, 'http://127.0.0.1/auth/callback');
      if (!isPage(form)) throw new Error('expected the password form');
      expect(form.html).to.contain('name="password"');
      const answer = await browser.submit(form, { username: 'ann', password: 'ann-password' }, 'http://127.0.0.1/auth/callback');
      expect(refused, 'the directory was asked').to.equal(true);
      if (!isPage(answer)) throw new Error(`expected the error page, got a redirect to ${answer.href}`);
      expect(answer.status, answer.html.slice(0, 300)).to.equal(500);
      expect(answer.html).to.contain('Something went wrong on our side');
      expect(server.logs()).to.contain('identity provider: a login page failed').and.to.contain('NOPERM');
      expect(await raw.keys('svc:idp:account:*'), 'the account record was stored before the finish').to.not.have.lengthOf(0);
    } finally {
      await raw.call('ACL', 'SETUSER', 'default', 'resetkeys', '~*');
      raw.disconnect();
      await server.close();
    }
  });
});
