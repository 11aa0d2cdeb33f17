/**
 * The bundled identity provider survives a restart: svc on Redis state with the LDAP connector
 * against a real slapd is stopped and started again on the same port and config dir, once in the
 * middle of a login (between the password form and its post) and once after it. Everything the
 * login needs must come back from svc-secret (signing and cookie keys) and Redis (interactions,
 * sessions, grants, codes, tokens, the identity behind a `sub`), none of it from the process.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import * as client from 'openid-client';
import { echoBackend, type Backend } from '../extensions/helpers.js';
import { authorizationRequest, svcWebClient } from '../helpers/authorization.js';
import { FormBrowser, isPage, type Page } from '../helpers/form-browser.js';
import { idpConfigDir } from '../helpers/manifests.js';
import { freePort, startPeer, startRedis, type Peer, type RedisPeer } from '../helpers/peers.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { ldapConnectorConfig } from '../connectors/ldap/fixture.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const FIXTURES = fileURLToPath(new URL('../../fixtures/', import.meta.url));
const SECRET_KEY = 'idp-restart-e2e-secret-key-0123456789';
const SCOPE = 'openid profile email groups offline_access';
const POLICY = ['p, role:dev-tools, extensions, *, */tools, allow', 'g, devs, role:dev-tools'].join('\n');

describe('e2e: the bundled identity provider across restarts (Redis, real slapd)', function () {
  cleanUpTempDirs();
  this.timeout(60_000);
  let slapd: Peer;
  let redis: RedisPeer;
  let backend: Backend;
  let server: TestServer | undefined;
  let dir: string;
  let port: number;
  let url: string;
  let redirectUri: string;
  let rp: client.Configuration;

  const start = async () => {
    server = await startTestServer(dir, { port, redisUrl: redis.url });
  };
  const restart = async () => {
    await server?.close(1000);
    server = undefined;
    await start();
  };

  before(async function () {
    const ldapPort = await freePort();
    slapd = await startPeer('start-slapd.sh', [String(ldapPort), '0'], { USERS_LDIF: join(FIXTURES, 'ldap', 'ldap-connector.ldif') });
    redis = await startRedis();
    backend = await echoBackend('tools');
    port = await freePort();
    url = `http://127.0.0.1:${port}`;
    redirectUri = `${url}/auth/callback`;
    const ldap = ldapConnectorConfig(ldapPort);
    dir = idpConfigDir({
      url, connectors: [{ type: 'ldap', id: 'corp', name: 'Corp directory', config: ldap }], extensions: ['tools'], backendUrl: backend.url, policy: POLICY,
      secrets: { 'server.secretkey': SECRET_KEY, 'ldap.bindPW': 'readerpw' },
    });
    await start();
    rp = await svcWebClient(url, SECRET_KEY);
  });

  after(async function () {
    await server?.close(1000);
    await backend?.close();
    await redis?.stop();
    await slapd?.stop();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  const authorization = (scope = SCOPE) => authorizationRequest(rp, redirectUri, scope);

  const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });

  it('completes a login begun before a restart, and keeps it working after another', async function () {
    const browser = new FormBrowser();
    const first = await authorization();
    const form = await browser.go(first.href, redirectUri);
    if (!isPage(form)) throw new Error('expected the password form');
    expect(form.html).to.contain('name="password"');

    await restart();
    const done = await browser.submit(form, { username: 'bob', password: 'bob123' }, redirectUri);
    if (isPage(done)) throw new Error(`expected the redirect with a code, got ${String(done.status)}: ${done.html.slice(0, 300)}`);
    const tokens = await client.authorizationCodeGrant(rp, done, { pkceCodeVerifier: first.verifier, expectedState: first.state });
    expect(tokens.claims()).to.deep.include({ preferred_username: 'bob', email: 'bob@example.org' });
    expect(tokens.refresh_token).to.be.a('string');
    const idToken = String(tokens.id_token);
    const sub = String(tokens.claims()?.sub);

    await restart();
    const me = await fetch(`${url}/api/v1/session/userinfo`, bearer(idToken));
    expect(await me.json()).to.deep.include({ loggedIn: true, username: sub });
    expect((await fetch(`${url}/api/v1/extensions/tools/x`, bearer(idToken))).status).to.equal(200);
    expect(await client.fetchUserInfo(rp, tokens.access_token, sub)).to.deep.include({ sub, preferred_username: 'bob' });

    const refreshed = await client.refreshTokenGrant(rp, String(tokens.refresh_token));
    expect(refreshed.claims()).to.include({ sub });
    expect(refreshed.refresh_token).to.be.a('string').and.not.equal(tokens.refresh_token);

    // The provider's session cookie, set before the restart, still identifies bob: no form.
    // (Without offline_access, to which svc adds prompt=consent.)
    const second = await authorization('openid profile groups');
    const again = await browser.go(second.href, redirectUri);
    if (isPage(again)) throw new Error(`expected no form, got ${String((again as Page).status)}: ${(again as Page).html.slice(0, 300)}`);
    const silent = await client.authorizationCodeGrant(rp, again, { pkceCodeVerifier: second.verifier, expectedState: second.state });
    expect(silent.claims()).to.include({ sub });
  });
});
