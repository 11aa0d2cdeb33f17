/**
 * The bundled provider's endpoints under other spellings of their paths, inside a real svc with
 * a static client: oidc-provider's router would serve `/TOKEN/Introspection`, `/auth/` and the
 * like as the endpoint, past svc's checks of the exact path (the audit of introspection and
 * revocation, the trimming of introspection's answer, the size bound of authorization requests,
 * the re-key at a resume). Each is refused with 404 and leaves no trace; the route's own spelling
 * is served with all of svc's checks; a login, whose interaction uid is of mixed case, completes.
 * The connector is a fake PasswordConnector (a double of the Connector contract).
 */
import { expect } from 'chai';
import * as client from 'openid-client';
import YAML from 'yaml';
import type { Identity } from '../../connectors/connector.js';
import { MAX_AUTHORIZATION_REQUEST_BYTES } from '../../src/idp/request-bounds.js';
import { collectAudit, type CollectedAudit } from '../helpers/audit.js';
import { authorizationRequest } from '../helpers/authorization.js';
import { fakePasswordConnector, singleConnector } from '../helpers/fake-password-connector.js';
import { FormBrowser, isPage } from '../helpers/form-browser.js';
import { configMap, secret, tempConfigDir } from '../helpers/manifests.js';
import { freePort } from '../helpers/peers.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const SECRET_KEY = 'idp-route-spelling-e2e-secret-key-0123456789';
const WIKI = 'https://wiki.example.org/cb';
const WIKI_SECRET = 'wiki-secret-0123456789';
const ALICE: Identity = { userId: 'u-alice', username: 'alice', email: 'alice@example.org', emailVerified: true, groups: ['devs'] };
const CONNECTORS = [{ type: 'ldap', id: 'directory', name: 'Directory', config: { host: 'ldap.invalid', userSearch: { baseDN: 'ou=people', username: 'uid', idAttr: 'uid' } } }];
const STATIC_CLIENTS = [
  { id: 'wiki', secret: '$wiki.secret', redirectURIs: [WIKI] },
  { id: 'dash', public: true, redirectURIs: ['http://127.0.0.1/cb'] },
];
/** What introspection tells a static client (docs/idp.md): no sid, nothing else. */
const TOLD = ['active', 'client_id', 'exp', 'groups', 'iat', 'iss', 'scope', 'sub', 'token_type'];

/** Other spellings oidc-provider's router folds to `path`: case, one trailing slash. */
function variantsOf(path: string): string[] {
  const segments = path.split('/');
  const last = segments.length - 1;
  const lastUpper = segments.map((s, i) => (i === last ? s.toUpperCase() : s)).join('/');
  const capital = segments.map((s, i) => (i === last ? `${s.charAt(0).toUpperCase()}${s.slice(1)}` : s)).join('/');
  return [...new Set([path.toUpperCase(), lastUpper, capital, `${path}/`])].filter((v) => v !== path);
}

describe('e2e: one spelling for each of the bundled provider\'s endpoints', function () {
  cleanUpTempDirs();
  this.timeout(30_000);
  let server: TestServer;
  let url: string;
  let issuer: string;
  let audit: CollectedAudit;
  let tokens: client.TokenEndpointResponse;

  before(async function () {
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    issuer = `${url}/api/idp`;
    audit = collectAudit();
    const dir = tempConfigDir({
      'svc-cm.yaml': configMap('svc-cm', { url, 'idp.config': YAML.stringify({ connectors: CONNECTORS, staticClients: STATIC_CLIENTS }) }),
      'svc-rbac-cm.yaml': configMap('svc-rbac-cm', { 'policy.csv': '' }),
      'svc-secret.yaml': secret('svc-secret', { 'server.secretkey': SECRET_KEY, 'wiki.secret': WIKI_SECRET }),
    });
    server = await startTestServer(dir, {
      port, audit,
      idp: { connectors: () => singleConnector('directory', fakePasswordConnector({ alice: { password: 'alice123', identity: ALICE } })) },
    });
    tokens = await wikiLogin();
  });

  after(() => server?.close());

  const wiki = () => client.discovery(new URL(issuer), 'wiki', undefined, client.ClientSecretBasic(WIKI_SECRET), { execute: [client.allowInsecureRequests] });

  /** wiki's login of alice through the password form; the interaction uid it went through and the tokens. */
  async function wikiLogin(): Promise<client.TokenEndpointResponse> {
    const config = await wiki();
    const request = await authorizationRequest(config, WIKI, 'openid profile groups offline_access');
    const browser = new FormBrowser();
    const form = await browser.go(request.href, WIKI);
    if (!isPage(form)) throw new Error('expected the password form');
    const done = await browser.submit(form, { username: 'alice', password: 'alice123' }, WIKI);
    if (isPage(done)) throw new Error(`expected the redirect with a code, got ${String(done.status)}: ${done.html.slice(0, 300)}`);
    return client.authorizationCodeGrant(config, done, { pkceCodeVerifier: request.verifier, expectedState: request.state });
  }

  /** POST a form to `path` under the issuer, as wiki (Basic) unless `auth` is false. */
  async function post(path: string, form: Record<string, string>, auth = true): Promise<{ status: number; body: Record<string, unknown> }> {
    const res = await fetch(`${issuer}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...(auth ? { authorization: `Basic ${Buffer.from(`wiki:${WIKI_SECRET}`).toString('base64')}` } : {}) },
      body: new URLSearchParams(form),
    });
    const text = await res.text();
    return { status: res.status, body: text === '' ? {} : JSON.parse(text) as Record<string, unknown> };
  }

  const notFound = (method: string, path: string) => ({ error: 'not_found', message: `no route for ${method} /api/idp${path}` });

  it('refuses every endpoint under another case or a trailing slash with 404, and serves its own spelling', async function () {
    const endpoints: { method: 'GET' | 'POST'; path: string; body?: Record<string, string> }[] = [
      { method: 'POST', path: '/token', body: { grant_type: 'refresh_token', refresh_token: 'nope' } },
      { method: 'POST', path: '/token/introspection', body: { token: 'nope' } },
      { method: 'POST', path: '/token/revocation', body: { token: 'nope' } },
      { method: 'GET', path: '/auth' },
      { method: 'POST', path: '/device/auth', body: { client_id: 'dash', scope: 'openid' } },
      { method: 'GET', path: '/me' },
      { method: 'POST', path: '/me' },
      { method: 'GET', path: '/session/end' },
      { method: 'GET', path: '/jwks' },
      { method: 'GET', path: '/.well-known/openid-configuration' },
      { method: 'GET', path: '/.well-known/oauth-authorization-server' },
      { method: 'GET', path: '/device' },
    ];
    for (const { method, path, body } of endpoints) {
      const send = (p: string) => fetch(`${issuer}${p}`, {
        method, redirect: 'manual',
        headers: { authorization: `Basic ${Buffer.from(`wiki:${WIKI_SECRET}`).toString('base64')}` },
        ...(method === 'POST' ? { body: new URLSearchParams(body ?? {}) } : {}),
      });
      const own = await send(path);
      await own.arrayBuffer();
      expect(own.status, `${method} ${path}`).not.to.equal(404);
      for (const variant of variantsOf(path)) {
        const res = await send(variant);
        expect(res.status, `${method} ${variant}`).to.equal(404);
        expect(await res.json(), `${method} ${variant}`).to.deep.equal(notFound(method, variant));
      }
    }
  });

  it('introspection: the trimmed answer and an audit event under its spelling; nothing told and nothing recorded under another', async function () {
    const before = audit.of('client-token-introspected').length;
    const own = await post('/token/introspection', { token: tokens.access_token });
    expect(own.status).to.equal(200);
    expect(Object.keys(own.body).sort()).to.deep.equal(TOLD);
    expect(audit.of('client-token-introspected')).to.have.lengthOf(before + 1);
    for (const path of ['/token/Introspection', '/token/INTROSPECTION', '/TOKEN/introspection', '/token/introspection/']) {
      const other = await post(path, { token: tokens.access_token });
      expect(other, path).to.deep.equal({ status: 404, body: notFound('POST', path) });
    }
    expect(audit.of('client-token-introspected'), 'no event for a refused spelling').to.have.lengthOf(before + 1);
  });

  it('introspection by a public client: unauthorized_client under its spelling, 404 under another (never {active: false})', async function () {
    const own = await post('/token/introspection', { token: tokens.access_token, client_id: 'dash' }, false);
    expect(own.status).to.equal(400);
    expect(own.body).to.have.property('error', 'unauthorized_client');
    for (const path of ['/token/Introspection', '/token/introspection/']) {
      expect(await post(path, { token: tokens.access_token, client_id: 'dash' }, false), path).to.deep.equal({ status: 404, body: notFound('POST', path) });
    }
  });

  it('revocation: refused with 404 and no event under another spelling; the token stays good', async function () {
    const refresh = String(tokens.refresh_token);
    const before = audit.of('client-token-revoked').length;
    for (const path of ['/token/Revocation', '/token/revocation/', '/TOKEN/REVOCATION']) {
      expect(await post(path, { token: refresh }), path).to.deep.equal({ status: 404, body: notFound('POST', path) });
    }
    expect(audit.of('client-token-revoked')).to.have.lengthOf(before);
    expect((await post('/token/introspection', { token: refresh })).body).to.include({ active: true });
  });

  it('the size bound of an authorization request: 414 under its spelling, 404 under another (never a login started)', async function () {
    const query = new URLSearchParams({ client_id: 'wiki', response_type: 'code', redirect_uri: WIKI, scope: 'openid', state: 'x'.repeat(MAX_AUTHORIZATION_REQUEST_BYTES * 2) });
    const own = await fetch(`${issuer}/auth?${query.toString()}`, { redirect: 'manual' });
    await own.arrayBuffer();
    expect(own.status).to.equal(414);
    for (const path of ['/AUTH', '/Auth', '/auth/']) {
      const res = await fetch(`${issuer}${path}?${query.toString()}`, { redirect: 'manual' });
      expect(res.status, path).to.equal(404);
      expect(await res.json(), path).to.deep.equal(notFound('GET', path));
    }
  });

  it('the resume of a login: 404 under another spelling of /auth/<uid>; under its own, with a mixed-case uid, the login completes', async function () {
    const config = await wiki();
    const request = await authorizationRequest(config, WIKI, 'openid');
    const browser = new FormBrowser();
    const started = await browser.request(request.href);
    await started.arrayBuffer();
    expect(started.status).to.equal(303);
    const uid = /\/interaction\/([^/?]+)/.exec(String(started.headers.get('location')))?.[1] ?? '';
    expect(uid).to.match(/^[A-Za-z0-9_-]{10,}$/).and.to.match(/[A-Z]/).and.to.match(/[a-z]/);
    for (const path of [`/auth/${uid}/`, `/AUTH/${uid}`, `/Auth/${uid}`]) {
      const res = await browser.request(`${issuer}${path}`);
      expect(res.status, path).to.equal(404);
      expect(await res.json(), path).to.deep.equal(notFound('GET', path));
    }
    const form = await browser.go(`${url}/api/idp/interaction/${uid}`, WIKI);
    if (!isPage(form)) throw new Error('expected the password form');
    const done = await browser.submit(form, { username: 'alice', password: 'alice123' }, WIKI);
    if (isPage(done)) throw new Error(`expected the redirect with a code, got ${String(done.status)}: ${done.html.slice(0, 300)}`);
    const issued = await client.authorizationCodeGrant(config, done, { pkceCodeVerifier: request.verifier, expectedState: request.state });
    expect(issued.claims()?.['sub']).to.be.a('string');
  });
});
