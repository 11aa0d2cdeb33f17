/**
 * svc's bundled provider as the sender of OIDC Back-Channel Logout: a static client with
 * `backchannelLogoutUri` (a test listener) gets ID tokens with `sid`, and when the user logs out
 * at svc's provider, a logout token that the listener verifies with svc's published keys: issuer,
 * the client as audience, the logout event, the same `sid`, no nonce. The same when the svc
 * session that came from that provider session is ended from svc's sessions list: the provider
 * session ends with it (no new login without the password), and so do svc's other sessions of
 * it, but not the user's sessions of another provider session. LDAP connector, real slapd.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { createRemoteJWKSet, decodeJwt, jwtVerify, type JWTPayload } from 'jose';
import * as client from 'openid-client';
import YAML from 'yaml';
import { collectAudit } from '../helpers/audit.js';
import { authorizationRequest } from '../helpers/authorization.js';
import { FormBrowser, isPage, type Page } from '../helpers/form-browser.js';
import { configMap, secret, tempConfigDir } from '../helpers/manifests.js';
import { freePort, startPeer, type Peer } from '../helpers/peers.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { ldapConnectorConfig } from '../connectors/ldap/fixture.js';

const FIXTURES = fileURLToPath(new URL('../../fixtures/', import.meta.url));
const WIKI_SECRET = 'wiki-client-secret-0123456789abcdef';
const REDIRECT = 'http://wiki.invalid/callback';
const LOGGED_OUT = 'http://wiki.invalid/logged-out';

describe('e2e: the bundled provider sends back-channel logout tokens to a static client', function () {
  this.timeout(60_000);
  let slapd: Peer;
  let server: TestServer;
  let listener: Server;
  let dir: string;
  let issuer: string;
  const audit = collectAudit();
  const received: { contentType: string | undefined; body: URLSearchParams }[] = [];

  before(async function () {
    const [ldapPort, port] = await Promise.all([freePort(), freePort()]);
    slapd = await startPeer('start-slapd.sh', [String(ldapPort), '0'], { USERS_LDIF: join(FIXTURES, 'ldap', 'ldap-connector.ldif') });
    listener = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({ contentType: req.headers['content-type'], body: new URLSearchParams(Buffer.concat(chunks).toString()) });
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    const backchannel = `http://127.0.0.1:${(listener.address() as AddressInfo).port}/backchannel`;
    const url = `http://127.0.0.1:${port}`;
    issuer = `${url}/api/idp`;
    const idpConfig = {
      connectors: [{ type: 'ldap', id: 'corp', name: 'Corp directory', config: ldapConnectorConfig(ldapPort) }],
      staticClients: [{ id: 'wiki', name: 'Team wiki', secret: '$wiki.secret', redirectURIs: [REDIRECT], postLogoutRedirectURIs: [LOGGED_OUT], backchannelLogoutUri: backchannel }],
    };
    dir = tempConfigDir({
      'svc-cm.yaml': configMap('svc-cm', { url, 'idp.config': YAML.stringify(idpConfig) }),
      'svc-rbac-cm.yaml': configMap('svc-rbac-cm', { 'policy.csv': '' }),
      'svc-secret.yaml': secret('svc-secret', { 'server.secretkey': 'idp-backchannel-e2e-secret-key-0123456789', 'ldap.bindPW': 'readerpw', 'wiki.secret': WIKI_SECRET }),
    });
    server = await startTestServer(dir, { port, audit });
  });
  after(async function () {
    await server?.close(1000);
    await new Promise<void>((resolve) => (listener === undefined ? resolve() : listener.close(() => resolve())));
    await slapd?.stop();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  beforeEach(() => {
    received.length = 0;
  });

  const page = (value: URL | Page): Page => {
    if (!isPage(value)) throw new Error(`expected a page, got a redirect to ${value.href}`);
    return value;
  };

  it('puts sid in the ID token and sends a logout token with it when the user logs out at svc', async function () {
    const rp = await client.discovery(new URL(issuer), 'wiki', undefined, client.ClientSecretBasic(WIKI_SECRET), { execute: [client.allowInsecureRequests] });
    const browser = new FormBrowser(fetch);
    const { href, verifier, state } = await authorizationRequest(rp, REDIRECT, 'openid');
    const back = await browser.submit(page(await browser.go(href, REDIRECT)), { username: 'alice', password: 'alice123' }, REDIRECT);
    if (isPage(back)) throw new Error(`expected the redirect back, got ${back.status}: ${back.html.slice(0, 300)}`);
    const tokens = await client.authorizationCodeGrant(rp, back, { pkceCodeVerifier: verifier, expectedState: state });
    const sid = decodeJwt(String(tokens.id_token))['sid'];
    expect(sid).to.be.a('string').and.not.equal('');

    const endSession = `${issuer}/session/end?${new URLSearchParams({ id_token_hint: String(tokens.id_token), post_logout_redirect_uri: LOGGED_OUT })}`;
    const done = await browser.submit(page(await browser.go(endSession, LOGGED_OUT)), { logout: 'yes' }, LOGGED_OUT);
    expect(String(done)).to.equal(LOGGED_OUT);

    expect(received).to.have.length(1);
    expect(received[0]?.contentType).to.equal('application/x-www-form-urlencoded');
    const logoutToken = String(received[0]?.body.get('logout_token'));
    const { payload, protectedHeader } = await jwtVerify(logoutToken, createRemoteJWKSet(new URL(`${issuer}/jwks`)), { issuer, audience: 'wiki' });
    expect(protectedHeader.typ).to.equal('logout+jwt');
    expect(payload).to.deep.include({ sid, sub: decodeJwt(String(tokens.id_token)).sub });
    expect((payload as JWTPayload & { events: unknown }).events).to.deep.equal({ 'http://schemas.openid.net/event/backchannel-logout': {} });
    expect(payload).not.to.have.property('nonce');
    expect(payload.jti).to.be.a('string');
    expect(server.logs()).to.include('back-channel logout token delivered');
  });

  it('ends the provider session, with a logout token to the client, when its svc session is ended from the list', async function () {
    const rp = await client.discovery(new URL(issuer), 'wiki', undefined, client.ClientSecretBasic(WIKI_SECRET), { execute: [client.allowInsecureRequests] });
    const url = issuer.slice(0, -'/api/idp'.length);
    // Browser A: the wiki, then svc's web UI twice, all through one provider session (one password).
    const a = new JarBrowser(fetch);
    const { href, verifier, state } = await authorizationRequest(rp, REDIRECT, 'openid');
    const back = await a.submit(page(await a.go(href, REDIRECT)), { username: 'alice', password: 'alice123' }, REDIRECT);
    if (isPage(back)) throw new Error(`expected the redirect back, got ${back.status}: ${back.html.slice(0, 300)}`);
    const wikiIdToken = String((await client.authorizationCodeGrant(rp, back, { pkceCodeVerifier: verifier, expectedState: state })).id_token);
    const svcLogin = async (browser: JarBrowser): Promise<string> => {
      expect(String(await browser.go(`${url}/auth/login?return_url=/apps`, `${url}/apps`)), 'no password asked again').to.equal(`${url}/apps`);
      return browser.cookie('svc.token');
    };
    const ended = await svcLogin(a);
    const sibling = await svcLogin(a);
    // Browser B: another provider session of the same user, which must stay.
    const b = new JarBrowser(fetch);
    await b.submit(page(await b.go(`${url}/auth/login?return_url=/apps`, `${url}/apps`)), { username: 'alice', password: 'alice123' }, `${url}/apps`);
    const other = b.cookie('svc.token');
    const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
    const listed = (await (await fetch(`${url}/api/v1/session/list`, { headers: bearer(ended) })).json()) as { items: { id: string; current: boolean }[] };
    expect(listed.items).to.have.length(3);
    const id = listed.items.find((i) => i.current)?.id as string;

    const res = await fetch(`${url}/api/v1/session/${encodeURIComponent(id)}`, { method: 'DELETE', headers: bearer(other) });
    expect(res.status).to.equal(200);

    expect(received, 'one logout token, to the wiki').to.have.length(1);
    const { payload } = await jwtVerify(String(received[0]?.body.get('logout_token')), createRemoteJWKSet(new URL(`${issuer}/jwks`)), { issuer, audience: 'wiki', typ: 'logout+jwt' });
    expect(payload).to.deep.include({ sid: decodeJwt(wikiIdToken)['sid'], sub: decodeJwt(wikiIdToken).sub });
    expect((payload as JWTPayload & { events: unknown }).events).to.deep.equal({ 'http://schemas.openid.net/event/backchannel-logout': {} });
    expect(payload).not.to.have.property('nonce');
    // The ended session and its sibling of the same provider session are refused; the other provider session's is not.
    expect((await fetch(`${url}/api/v1/session/list`, { headers: bearer(ended) })).status).to.equal(401);
    expect((await fetch(`${url}/api/v1/session/list`, { headers: bearer(sibling) })).status).to.equal(401);
    const left = (await (await fetch(`${url}/api/v1/session/list`, { headers: bearer(other) })).json()) as { items: unknown[] };
    expect(left.items).to.have.length(1);
    // The provider session is gone: svc's login asks for the password again.
    expect(isPage(await a.go(`${url}/auth/login?return_url=/apps`, `${url}/apps`)), 'the password form').to.equal(true);
    expect(audit.of('idp-session-ended').map((e) => [e.outcome, e.user?.id, e.svc?.['via'], e.svc?.['notified']]))
      .to.deep.equal([['success', decodeJwt(wikiIdToken).sub, 'svc-session', ['wiki']]]);
    expect(audit.of('session-ended').map((e) => e.svc?.['via'])).to.deep.equal(['list', 'provider']);
    expect(server.logs()).to.include('identity provider: session ended from svc');
  });

  it('ends svc\'s own sessions of a provider session that logs out at /session/end from another application', async function () {
    const rp = await client.discovery(new URL(issuer), 'wiki', undefined, client.ClientSecretBasic(WIKI_SECRET), { execute: [client.allowInsecureRequests] });
    const url = issuer.slice(0, -'/api/idp'.length);
    const browser = new JarBrowser(fetch);
    await browser.submit(page(await browser.go(`${url}/auth/login?return_url=/apps`, `${url}/apps`)), { username: 'alice', password: 'alice123' }, `${url}/apps`);
    const token = browser.cookie('svc.token');
    const { href, verifier, state } = await authorizationRequest(rp, REDIRECT, 'openid');
    const back = await browser.go(href, REDIRECT);
    if (isPage(back)) throw new Error(`expected the redirect back without a password, got ${back.status}`);
    const wikiIdToken = String((await client.authorizationCodeGrant(rp, back, { pkceCodeVerifier: verifier, expectedState: state })).id_token);
    expect((await fetch(`${url}/api/v1/session/list`, { headers: { authorization: `Bearer ${token}` } })).status).to.equal(200);

    const endSession = `${issuer}/session/end?${new URLSearchParams({ id_token_hint: wikiIdToken, post_logout_redirect_uri: LOGGED_OUT })}`;
    expect(String(await browser.submit(page(await browser.go(endSession, LOGGED_OUT)), { logout: 'yes' }, LOGGED_OUT))).to.equal(LOGGED_OUT);

    expect((await fetch(`${url}/api/v1/session/list`, { headers: { authorization: `Bearer ${token}` } })).status).to.equal(401);
    expect(audit.of('session-ended').slice(-1).map((e) => e.svc?.['via'])).to.deep.equal(['backchannel']);
  });
});

/** A FormBrowser that hands out one of its cookies (svc's session token, for the API). */
class JarBrowser extends FormBrowser {
  cookie(name: string): string {
    const found = this.cookieHeader().split('; ').find((c) => c.startsWith(`${name}=`));
    if (found === undefined) throw new Error(`no cookie ${name}`);
    return decodeURIComponent(found.slice(name.length + 1));
  }
}
