/**
 * Two svc processes sharing one Redis and one config dir act as one identity provider: a login
 * begun on one replica is finished on the other, and every token works wherever it is used.
 *
 * Both replicas serve the same `url` (the issuer is `<url>/api/idp`), so the test puts a small
 * HTTP forwarder on that address, as a load balancer would be, and sends each step to the
 * replica it names; the forwarder keeps the Host header and records which replica served what.
 * The config dir starts without identity provider keys: the replicas start together and must
 * agree on the ones they generate.
 */
import { rm } from 'node:fs/promises';
import { createServer, request, type Server } from 'node:http';
import { Writable } from 'node:stream';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { decodeProtectedHeader } from 'jose';
import * as client from 'openid-client';
import YAML from 'yaml';
import { runRotateKeys } from '../../src/commands/idp.js';
import { waitFor } from '../helpers/accounts-fixture.js';
import { authorizationRequest, svcWebClient } from '../helpers/authorization.js';
import { FormBrowser, isPage } from '../helpers/form-browser.js';
import { configMap, secret, tempConfigDir } from '../helpers/manifests.js';
import { freePort, startPeer, startRedis, type Peer, type RedisPeer } from '../helpers/peers.js';
import { startReplica, stopReplica, type Replica } from '../helpers/replica-process.js';
import { ldapConnectorConfig } from '../connectors/ldap/fixture.js';

const FIXTURES = fileURLToPath(new URL('../../fixtures/', import.meta.url));
const SECRET_KEY = 'idp-replicas-e2e-secret-key-0123456789';
const SCOPE = 'openid profile email groups offline_access';

type Name = 'a' | 'b';

interface Forwarder {
  readonly url: string;
  /** Sends every request from now on to this replica. */
  to(name: Name): void;
  /** `<replica> <method> <path without query>` for every request served, in order. */
  readonly served: string[];
  close(): Promise<void>;
}

async function startForwarder(port: number, replicas: () => Record<Name, Replica>): Promise<Forwarder> {
  let target: Name = 'a';
  const served: string[] = [];
  const server: Server = createServer((req, res) => {
    const upstream = new URL(replicas()[target].url);
    served.push(`${target} ${String(req.method)} ${String(req.url).split('?')[0]}`);
    const out = request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    out.on('error', () => res.destroy());
    req.pipe(out);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${port}`,
    to: (name) => { target = name; },
    served,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

describe('e2e: the bundled identity provider on two replicas sharing Redis (real slapd)', function () {
  this.timeout(60_000);
  let slapd: Peer;
  let redis: RedisPeer;
  let replicas: Record<Name, Replica>;
  let lb: Forwarder;
  let dir: string;
  let url: string;
  let redirectUri: string;
  let rp: client.Configuration;

  before(async function () {
    const ldapPort = await freePort();
    slapd = await startPeer('start-slapd.sh', [String(ldapPort), '0'], { USERS_LDIF: join(FIXTURES, 'ldap', 'ldap-connector.ldif') });
    redis = await startRedis();
    lb = await startForwarder(await freePort(), () => replicas);
    url = lb.url;
    redirectUri = `${url}/auth/callback`;
    const ldap = ldapConnectorConfig(ldapPort);
    dir = tempConfigDir({
      'svc-cm.yaml': configMap('svc-cm', { url, 'idp.config': YAML.stringify({ connectors: [{ type: 'ldap', id: 'corp', name: 'Corp directory', config: ldap }] }) }),
      'svc-rbac-cm.yaml': configMap('svc-rbac-cm', { 'policy.csv': '' }),
      'svc-secret.yaml': secret('svc-secret', { 'server.secretkey': SECRET_KEY, 'ldap.bindPW': 'readerpw' }),
    });
    const [a, b] = await Promise.all([startReplica(dir, redis.url), startReplica(dir, redis.url)]);
    replicas = { a, b };
    rp = await svcWebClient(url, SECRET_KEY);
  });

  after(async function () {
    await Promise.all([stopReplica(replicas?.a), stopReplica(replicas?.b)]);
    await lb?.close();
    await redis?.stop();
    await slapd?.stop();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  const authorization = (scope = SCOPE) => authorizationRequest(rp, redirectUri, scope);

  /** Runs `step` with every request sent to `name`; checks that replica served them all. */
  async function on<T>(name: Name, step: () => Promise<T>): Promise<T> {
    lb.to(name);
    const from = lb.served.length;
    const result = await step();
    const seen = lb.served.slice(from);
    expect(seen.length, `requests of a step sent to ${name}`).to.be.above(0);
    expect(seen.filter((line) => !line.startsWith(`${name} `))).to.deep.equal([]);
    return result;
  }

  it('publishes the same signing keys on both replicas, generated by whichever started first', async function () {
    const jwks = async (name: Name) => on(name, async () => (await fetch(`${url}/api/idp/jwks`)).json());
    const [a, b] = [await jwks('a'), await jwks('b')];
    expect(a).to.have.property('keys').with.lengthOf(1);
    expect(b).to.deep.equal(a);
  });

  it('finishes on one replica a login begun on the other; code, refresh and revocation work across them', async function () {
    const browser = new FormBrowser();
    const first = await authorization();
    const form = await on('a', () => browser.go(first.href, redirectUri));
    if (!isPage(form)) throw new Error('expected the password form');
    expect(form.html).to.contain('name="password"');

    const done = await on('b', () => browser.submit(form, { username: 'bob', password: 'bob123' }, redirectUri));
    if (isPage(done)) throw new Error(`expected the redirect with a code, got ${String(done.status)}: ${done.html.slice(0, 300)}`);
    const tokens = await on('a', () => client.authorizationCodeGrant(rp, done, { pkceCodeVerifier: first.verifier, expectedState: first.state }));
    expect(tokens.claims()).to.deep.include({ preferred_username: 'bob', email: 'bob@example.org' });
    const sub = String(tokens.claims()?.sub);

    const refreshed = await on('b', () => client.refreshTokenGrant(rp, String(tokens.refresh_token)));
    expect(refreshed.claims()).to.include({ sub });
    const userinfo = await on('b', () => client.fetchUserInfo(rp, refreshed.access_token, sub));
    expect(userinfo).to.include({ sub, preferred_username: 'bob' });

    // The ID token on svc's own API, on each replica.
    for (const name of ['a', 'b'] as const) {
      const me = await on(name, () => fetch(`${url}/api/v1/session/userinfo`, { headers: { authorization: `Bearer ${String(refreshed.id_token)}` } }));
      expect(await me.json(), name).to.deep.include({ loggedIn: true, username: sub });
    }

    // The provider's session cookie, set by b, identifies bob on a: no form.
    const second = await authorization('openid profile groups');
    const silent = await on('a', () => browser.go(second.href, redirectUri));
    if (isPage(silent)) throw new Error(`expected no form, got ${String(silent.status)}: ${silent.html.slice(0, 300)}`);
    expect((await on('b', () => client.authorizationCodeGrant(rp, silent, { pkceCodeVerifier: second.verifier, expectedState: second.state }))).claims()).to.include({ sub });

    await on('a', () => client.tokenRevocation(rp, String(refreshed.refresh_token)));
    const refused = await on('b', () => client.refreshTokenGrant(rp, String(refreshed.refresh_token)).catch((e: unknown) => e));
    expect(refused).to.have.property('error', 'invalid_grant');
    await on('a', () => client.tokenRevocation(rp, refreshed.access_token));
    const gone = await on('b', () => client.fetchUserInfo(rp, refreshed.access_token, sub).catch((e: unknown) => e));
    expect((gone as { response?: Response }).response?.status).to.equal(401);
  });

  it('refuses on one replica a code already redeemed on the other', async function () {
    const browser = new FormBrowser();
    const login = await authorization('openid');
    const form = await on('b', () => browser.go(login.href, redirectUri));
    if (!isPage(form)) throw new Error('expected the password form');
    const done = await on('a', () => browser.submit(form, { username: 'alice', password: 'alice123' }, redirectUri));
    if (isPage(done)) throw new Error('expected the redirect with a code');
    await on('b', () => client.authorizationCodeGrant(rp, done, { pkceCodeVerifier: login.verifier, expectedState: login.state }));
    const again = await on('a', () => client.authorizationCodeGrant(rp, done, { pkceCodeVerifier: login.verifier, expectedState: login.state }).catch((e: unknown) => e));
    expect(again).to.have.property('error', 'invalid_grant');
  });
  /** Password form on `begin`, posted on `post`; the redirect with the code. */
  async function logIn(browser: FormBrowser, begin: Name, post: Name, username: string, password: string, scope = SCOPE) {
    const login = await authorization(scope);
    const form = await on(begin, () => browser.go(login.href, redirectUri));
    if (!isPage(form)) throw new Error('expected the password form');
    const done = await on(post, () => browser.submit(form, { username, password }, redirectUri));
    if (isPage(done)) throw new Error(`expected the redirect with a code, got ${String(done.status)}`);
    return { ...login, done };
  }

  it('treats a refresh token used again on the other replica as reuse: the whole grant is revoked', async function () {
    const { done, verifier, state } = await logIn(new FormBrowser(), 'a', 'a', 'bob', 'bob123');
    const tokens = await on('a', () => client.authorizationCodeGrant(rp, done, { pkceCodeVerifier: verifier, expectedState: state }));
    const rotated = await on('a', () => client.refreshTokenGrant(rp, String(tokens.refresh_token)));
    const reused = await on('b', () => client.refreshTokenGrant(rp, String(tokens.refresh_token)).catch((e: unknown) => e));
    expect(reused).to.have.property('error', 'invalid_grant');
    const successor = await on('a', () => client.refreshTokenGrant(rp, String(rotated.refresh_token)).catch((e: unknown) => e));
    expect(successor).to.have.property('error', 'invalid_grant');
  });

  it('ends on one replica a session logged out on the other', async function () {
    const browser = new FormBrowser();
    const { done, verifier, state } = await logIn(browser, 'a', 'b', 'alice', 'alice123', 'openid');
    const tokens = await on('a', () => client.authorizationCodeGrant(rp, done, { pkceCodeVerifier: verifier, expectedState: state }));
    const end = client.buildEndSessionUrl(rp, { id_token_hint: String(tokens.id_token), post_logout_redirect_uri: url });
    const confirm = await on('b', () => browser.go(end.href, `${url}/`));
    if (!isPage(confirm)) throw new Error('expected the logout confirmation');
    const back = await on('b', () => browser.submit(confirm, { logout: 'yes' }, url));
    expect(back).to.be.instanceOf(URL);
    const again = await authorization('openid');
    const form = await on('a', () => browser.go(again.href, redirectUri));
    expect(isPage(form) && form.html).to.contain('name="password"');
  });

  it('after rotate-keys, both replicas publish the new key, which does not sign yet; tokens of the old key work on both', async function () {
    const before = await logIn(new FormBrowser(), 'a', 'a', 'bob', 'bob123', 'openid groups');
    const old = await on('a', () => client.authorizationCodeGrant(rp, before.done, { pkceCodeVerifier: before.verifier, expectedState: before.state }));
    const oldKid = decodeProtectedHeader(String(old.id_token)).kid;
    const quiet = new Writable({ write(_c, _e, done) { done(); } });
    expect(await runRotateKeys(dir, quiet, quiet)).to.equal(0);
    const kids = async (name: Name) => {
      const res = await fetch(`${replicas[name].url}/api/idp/jwks`);
      return ((await res.json()) as { keys: { kid: string }[] }).keys.map((k) => k.kid);
    };
    // The replica that sees the change first must not sign with a key the other cannot check yet.
    await waitFor(async () => (await kids('a')).length === 2, 'replica a to publish the new key');
    const early = await logIn(new FormBrowser(), 'a', 'a', 'bob', 'bob123', 'openid groups');
    const signed = await on('a', () => client.authorizationCodeGrant(rp, early.done, { pkceCodeVerifier: early.verifier, expectedState: early.state }));
    expect(decodeProtectedHeader(String(signed.id_token)).kid).to.equal(oldKid);
    await waitFor(async () => (await kids('b')).length === 2, 'replica b to publish the new key');
    expect(new Set(await kids('b'))).to.deep.equal(new Set(await kids('a')));
    for (const name of ['a', 'b'] as const) {
      for (const token of [old.id_token, signed.id_token]) {
        const me = await on(name, () => fetch(`${url}/api/v1/session/userinfo`, { headers: { authorization: `Bearer ${String(token)}` } }));
        expect(await me.json(), name).to.deep.include({ loggedIn: true });
      }
    }
  });
});
