/**
 * A real oidc-provider over the state adapter, twice: two "replicas" (two providers, two Koa
 * apps, two state clients) mounted at /api/idp with the same keys, sharing one backend. An
 * openid-client relying party runs the authorization-code + PKCE flow while every browser
 * step and every back-channel call alternates between the replicas, so each step finds what
 * the other replica stored. The provider's dev interactions stand in for the login page.
 * Then what the adapter's consume and revokeByGrantId are for, through the provider: a
 * reused refresh token or code revokes every token of the grant.
 */
import { expect } from 'chai';
import { generateKeyPair, exportJWK } from 'jose';
import Koa from 'koa';
import mount from 'koa-mount';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import Provider, { type Configuration } from 'oidc-provider';
import * as client from 'openid-client';
import { pino } from 'pino';
import { createStateAdapterClass } from '../../src/idp/storage/adapter.js';
import { createMemoryState } from '../../src/state/memory.js';
import { createRedisState } from '../../src/state/redis.js';
import type { StateBackend } from '../../src/state/state.js';
import { freePort } from '../helpers/peers.js';
import { startInspectedRedis, type InspectedRedis } from '../helpers/redis-raw.js';

const log = pino({ level: 'silent' });
const CLIENT_ID = 'svc';
const CLIENT_SECRET = 'a-client-secret-for-tests';
const REDIRECT_URI = 'http://127.0.0.1:1/auth/callback';   // never fetched: the flow stops at it
const COOKIE_KEYS = ['cookie-key-for-tests'];
const SERVER_SECRET_KEY = 'adapter-flow-server-secret-key';

interface Replica {
  readonly origin: string;
  readonly server: Server;
}

async function startReplica(port: number, issuer: string, state: StateBackend, jwk: object): Promise<Replica> {
  const config: Configuration = {
    adapter: createStateAdapterClass(state, { serverSecretKey: SERVER_SECRET_KEY }),
    clients: [{
      client_id: CLIENT_ID, client_secret: CLIENT_SECRET, redirect_uris: [REDIRECT_URI],
      grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    }],
    cookies: { keys: COOKIE_KEYS },
    findAccount: (_ctx, sub) => ({ accountId: sub, claims: () => ({ sub }) }),
    jwks: { keys: [jwk] },
    pkce: { required: () => true },
    rotateRefreshToken: true,
    ttl: { AccessToken: 600, AuthorizationCode: 60, IdToken: 600, Interaction: 600, Session: 600, Grant: 3600, RefreshToken: 3600 },
  };
  const provider = new Provider(issuer, config);
  const app = new Koa();
  app.keys = COOKIE_KEYS;   // koa-mount signs the provider's cookies with the parent's keys
  app.use(mount('/api/idp', provider));
  const server = app.listen(port, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

/** The same URL on another replica. */
function on(replica: Replica, url: string): string {
  const u = new URL(url);
  return `${replica.origin}${u.pathname}${u.search}`;
}

/**
 * Just enough browser: a cookie jar (paths ignored: the provider's cookies are all sent back
 * where they matter), redirects followed by hand, and the dev interaction forms (log in as
 * `account`, then approve). Request n goes to replica n % 2. Returns the redirect to the client.
 */
async function browse(start: string, replicas: readonly Replica[], account: string, jar = new Map<string, string>()): Promise<URL> {
  let request: { url: string; form?: URLSearchParams } = { url: start };
  for (let hop = 0; hop < 20; hop++) {
    const replica = replicas[hop % replicas.length] as Replica;
    const res = await fetch(on(replica, request.url), {
      redirect: 'manual',
      headers: { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') },
      ...(request.form === undefined ? {} : { method: 'POST', body: request.form }),
    });
    for (const cookie of res.headers.getSetCookie()) {
      const [pair = ''] = cookie.split(';');
      const [name = '', value = ''] = pair.split('=');
      if (value === '') jar.delete(name); else jar.set(name, value);
    }
    const location = res.headers.get('location');
    if (location !== null) {
      const next = new URL(location, res.url);
      if (next.href.startsWith(REDIRECT_URI)) return next;
      request = { url: next.href };
      continue;
    }
    const html = await res.text();
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
    const prompt = /name="prompt" value="(\w+)"/.exec(html)?.[1];
    if (res.status !== 200 || action === undefined || prompt === undefined) {
      throw new Error(`unexpected page at hop ${hop} (${res.status}): ${html.slice(0, 300)}`);
    }
    const form = new URLSearchParams(prompt === 'login' ? { prompt, login: account, password: 'any' } : { prompt });
    request = { url: new URL(action, res.url).href, form };
  }
  throw new Error('no redirect to the client after 20 hops');
}

interface Backend {
  readonly name: string;
  open(): StateBackend;
  rawKeys?(): Promise<string[]>;
  /** Every value under svc:idp:*, a hash's fields and values joined. */
  rawValues?(): Promise<string[]>;
  setup?(): Promise<void>;
  teardown?(): Promise<void>;
}

let redis: InspectedRedis | undefined;
let memory: StateBackend | undefined;
const backends: Backend[] = [
  {
    name: 'memory',
    open: () => (memory ??= createMemoryState({ log })),
  },
  {
    name: 'redis',
    async setup() {
      redis = await startInspectedRedis();
    },
    open: () => createRedisState({ url: (redis as InspectedRedis).url, log }),
    rawKeys: async () => (await (redis as InspectedRedis).rawEntries('svc:idp:*')).map(([key]) => key),
    rawValues: async () => (await (redis as InspectedRedis).rawEntries('svc:idp:*')).map(([, value]) => value),
    async teardown() {
      await redis?.stop();
    },
  },
];

for (const backend of backends) {
  describe(`e2e: oidc-provider over the state adapter, two replicas on ${backend.name}`, function () {
    this.timeout(20_000);
    let replicas: Replica[] = [];
    let states: StateBackend[] = [];
    let rp: client.Configuration;
    /** The same relying party, its back-channel calls sent to the first replica. */
    let rpFirst: client.Configuration;
    let issuer = '';

    before(async function () {
      await backend.setup?.();
      const { privateKey } = await generateKeyPair('RS256', { extractable: true });
      const jwk = { ...(await exportJWK(privateKey)), alg: 'RS256', use: 'sig' };
      const ports = [await freePort(), await freePort()] as const;
      issuer = `http://127.0.0.1:${ports[0]}/api/idp`;
      states = [backend.open(), backend.open()];
      replicas = await Promise.all(ports.map((port, i) => startReplica(port, issuer, states[i] as StateBackend, jwk)));
      // The relying party's own calls (discovery, token, userinfo) go to the second replica.
      const viaSecond: client.CustomFetch = (url, options) => fetch(on(replicas[1] as Replica, url), options as RequestInit);
      rp = await client.discovery(new URL(issuer), CLIENT_ID, undefined, client.ClientSecretBasic(CLIENT_SECRET), {
        execute: [client.allowInsecureRequests],
        [client.customFetch]: viaSecond,
      });
      const viaFirst: client.CustomFetch = (url, options) => fetch(on(replicas[0] as Replica, url), options as RequestInit);
      rpFirst = await client.discovery(new URL(issuer), CLIENT_ID, undefined, client.ClientSecretBasic(CLIENT_SECRET), {
        execute: [client.allowInsecureRequests],
        [client.customFetch]: viaFirst,
      });
    });

    after(async function () {
      await Promise.all(replicas.map((r) => new Promise((resolve) => r.server.close(resolve))));
      await Promise.all([...new Set(states)].map((s) => s.close()));
      memory = undefined;
      await backend.teardown?.();
    });

    /** One login of `account` through both replicas; the code as the client receives it. */
    async function authorize(account: string, scope: string, jar?: Map<string, string>): Promise<{ callback: URL; verifier: string; state: string }> {
      const verifier = client.randomPKCECodeVerifier();
      const state = client.randomState();
      const url = client.buildAuthorizationUrl(rp, {
        redirect_uri: REDIRECT_URI, scope, state, prompt: 'consent',
        code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256',
      });
      return { callback: await browse(url.href, replicas, account, jar), verifier, state };
    }

    it('logs in with code + PKCE, refreshes, and revokes the whole grant when a refresh token is reused', async function () {
      const { callback, verifier, state } = await authorize('alice', 'openid offline_access');
      const tokens = await client.authorizationCodeGrant(rp, callback, { pkceCodeVerifier: verifier, expectedState: state });
      expect(tokens.claims()).to.include({ sub: 'alice', iss: issuer, aud: CLIENT_ID });
      expect(tokens.refresh_token).to.be.a('string');
      expect(await client.fetchUserInfo(rp, tokens.access_token, 'alice')).to.include({ sub: 'alice' });
      if (backend.rawKeys !== undefined) {
        const keys = await backend.rawKeys();
        for (const kind of ['Session', 'Grant', 'AccessToken', 'RefreshToken', 'AuthorizationCode', 'grant', 'uid:Session']) {
          expect(keys.some((k) => k.startsWith(`svc:idp:${kind}:`)), kind).to.equal(true);
        }
      }

      const refreshed = await client.refreshTokenGrant(rp, tokens.refresh_token as string);
      expect(refreshed.refresh_token).to.be.a('string').and.not.equal(tokens.refresh_token);
      expect(await client.fetchUserInfo(rp, refreshed.access_token, 'alice')).to.include({ sub: 'alice' });

      // Opaque tokens are their own ids: the stored records, as either replica sees them.
      const stored = createStateAdapterClass(states[0] as StateBackend, { serverSecretKey: SERVER_SECRET_KEY });
      expect(await new stored('AccessToken').find(refreshed.access_token)).to.include({ accountId: 'alice' });
      expect(await new stored('RefreshToken').find(tokens.refresh_token as string)).to.have.property('consumed');

      // The rotated-out refresh token again: invalid_grant, and every token of the grant goes
      // (the provider also drops the Grant, so the check below is on the records themselves).
      const reuse = await client.refreshTokenGrant(rp, tokens.refresh_token as string).catch((e: unknown) => e);
      expect(reuse).to.have.property('error', 'invalid_grant');
      for (const [model, token] of [['AccessToken', tokens.access_token], ['AccessToken', refreshed.access_token],
        ['RefreshToken', refreshed.refresh_token as string]] as const) {
        expect(await new stored(model).find(token), model).to.equal(undefined);
      }
      const later = await client.refreshTokenGrant(rp, refreshed.refresh_token as string).catch((e: unknown) => e);
      expect(later).to.have.property('error', 'invalid_grant');
      const info = await client.fetchUserInfo(rp, refreshed.access_token, 'alice').catch((e: unknown) => e);
      expect(info).to.be.instanceOf(Error);
      expect(String((info as { response?: Response }).response?.status)).to.equal('401');
    });

    if (backend.rawKeys !== undefined) {
      it('keeps no code, token or session cookie value in any key or value of the backend', async function () {
        const cookies = new Map<string, string>();
        const { callback, verifier, state } = await authorize('dave', 'openid offline_access', cookies);
        const code = callback.searchParams.get('code') as string;
        const before = [...(await backend.rawKeys?.() ?? []), ...(await backend.rawValues?.() ?? [])];
        const tokens = await client.authorizationCodeGrant(rp, callback, { pkceCodeVerifier: verifier, expectedState: state });
        const refreshed = await client.refreshTokenGrant(rp, tokens.refresh_token as string);
        const after = [...(await backend.rawKeys?.() ?? []), ...(await backend.rawValues?.() ?? [])];
        const session = cookies.get('_session') as string;
        expect(session).to.be.a('string').with.length.above(20);
        expect(after.some((k) => k.startsWith('svc:idp:RefreshToken:'))).to.equal(true);
        for (const [what, value] of [['code', code], ['session cookie', session], ['access token', tokens.access_token],
          ['refresh token', tokens.refresh_token as string], ['new access token', refreshed.access_token], ['new refresh token', refreshed.refresh_token as string]] as const) {
          expect(value, what).to.be.a('string').with.length.above(20);
          for (const text of [...before, ...after]) expect(text.includes(value), `${what} in the backend`).to.equal(false);
        }
      });
    }

    it('redeems a code once; a second redemption fails and revokes what the first one got', async function () {
      const { callback, verifier, state } = await authorize('bob', 'openid');
      const tokens = await client.authorizationCodeGrant(rp, callback, { pkceCodeVerifier: verifier, expectedState: state });
      expect(tokens.claims()).to.include({ sub: 'bob' });
      const again = await client.authorizationCodeGrant(rp, callback, { pkceCodeVerifier: verifier, expectedState: state })
        .catch((e: unknown) => e);
      expect(again).to.have.property('error', 'invalid_grant');
      expect(await new (createStateAdapterClass(states[1] as StateBackend, { serverSecretKey: SERVER_SECRET_KEY }))('AccessToken').find(tokens.access_token)).to.equal(undefined);
      const info = await client.fetchUserInfo(rp, tokens.access_token, 'bob').catch((e: unknown) => e);
      expect(String((info as { response?: Response }).response?.status)).to.equal('401');
    });

    it('gives tokens to exactly one of two redemptions of one code sent to both replicas at once', async function () {
      for (let round = 0; round < 5; round++) {
        const { callback, verifier, state } = await authorize(`carol${round}`, 'openid');
        const checks = { pkceCodeVerifier: verifier, expectedState: state };
        const results = await Promise.allSettled([
          client.authorizationCodeGrant(rp, callback, checks), client.authorizationCodeGrant(rpFirst, callback, checks),
        ]);
        expect(results.filter((r) => r.status === 'fulfilled'), `round ${round}`).to.have.length(1);
        expect(results.find((r) => r.status === 'rejected')?.reason).to.have.property('error', 'invalid_grant');
      }
    });
  });
}
