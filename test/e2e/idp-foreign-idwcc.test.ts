/**
 * idwcc (Debian's idwcc, iddawc 1.1.8), an OAuth2/OIDC client made to check a provider strictly,
 * with svc's bundled provider as a confidential static client (issue 53): its strict discovery
 * check, then the code flow with PKCE S256, state and nonce, client_secret_basic, userinfo and a
 * refresh, all through the JSON API behind its page (no browser): the test's own HTTP client
 * logs the person in and hands idwcc the redirect, as its callback page would.
 */
import { expect } from 'chai';
import { IDENTITY, logInAt, startForeignIdp, userinfo, verifiedIdToken, type ForeignIdp } from '../helpers/foreign-idp.js';
import { startForeign, type ForeignProcess } from '../helpers/foreign-process.js';
import { freePort } from '../helpers/peers.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const CLIENT = 'idwcc';
const SECRET = 'idwcc-client-secret-0123456789';
/** iddawc's session fields (iddawc.h): response types and token endpoint methods are bit flags. */
const RESPONSE_TYPE_CODE = 0x00000001;
const RESPONSE_TYPE_REFRESH_TOKEN = 0x00100000;
const TOKEN_METHOD_SECRET_BASIC = 0x00000001;
const AUTH_METHOD_GET = 0x00000001;
const PKCE_S256 = 2;

type Session = Record<string, unknown>;

describe('e2e: idwcc with the bundled identity provider (strict discovery, code flow)', function () {
  cleanUpTempDirs();
  this.timeout(60_000);
  let idp: ForeignIdp;
  let idwcc: ForeignProcess;
  let api: string;
  let redirect: string;

  before(async function () {
    const port = await freePort();
    api = `http://localhost:${port}`;
    redirect = `${api}/callback.html`;
    idp = await startForeignIdp([{ id: CLIENT, name: 'idwcc', secret: '$idwcc.clientSecret', redirectURIs: [redirect] }], { 'idwcc.clientSecret': SECRET });
    // idwcc ends when its standard input does: a pipe held open.
    idwcc = startForeign('idwcc', ['--port', String(port)], {}, { stdin: 'pipe' });
    await idwcc.waitFor(/Start idwcc on port/);
  });
  after(async function () {
    await idwcc?.stop();
    await idp?.close();
  });

  async function call(method: string, path: string, body?: Session | URLSearchParams): Promise<{ status: number; text: string }> {
    const res = await fetch(`${api}${path}`, {
      method,
      ...(body === undefined ? {} : body instanceof URLSearchParams ? { body } : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
    });
    return { status: res.status, text: await res.text() };
  }
  async function session(): Promise<Session> {
    return JSON.parse((await call('GET', '/api/session')).text) as Session;
  }
  async function change(fields: Session): Promise<void> {
    const saved = await call('POST', '/api/session', { ...(await session()), ...fields });
    expect(saved.status, saved.text).to.equal(200);
  }

  it('passes its strict discovery check, logs in with PKCE, and gets a verified ID token, userinfo and a refreshed token', async function () {
    await change({
      openid_config_endpoint: `${idp.issuer}/.well-known/openid-configuration`, openid_config_strict: true,
      client_id: CLIENT, client_secret: SECRET, redirect_uri: redirect, scope: 'openid profile email offline_access',
      response_type: RESPONSE_TYPE_CODE, auth_method: AUTH_METHOD_GET, token_method: TOKEN_METHOD_SECRET_BASIC, pkce_method: PKCE_S256,
    });
    const config = await call('POST', '/api/configDownload');
    expect(config.status, config.text).to.equal(200);
    const loaded = await session();
    expect(loaded['openid_config_strict'], 'the check was the strict one').to.equal(true);
    expect(loaded['token_endpoint']).to.equal(`${idp.issuer}/token`);
    expect(loaded['userinfo_endpoint']).to.equal(`${idp.issuer}/me`);
    for (const property of ['nonce', 'state', 'pkce']) expect((await call('PUT', '/api/generate', new URLSearchParams({ property }))).status, property).to.equal(200);

    const auth = await call('PUT', '/api/auth', new URLSearchParams({ use_par: 'false' }));
    expect(auth.status, auth.text).to.equal(200);
    const authorize = new URL(String((JSON.parse(auth.text) as { url: string }).url));
    expect(authorize.searchParams.get('code_challenge_method')).to.equal('S256');
    const callback = await logInAt(authorize.href, redirect);
    const parsed = await call('POST', '/api/parseRedirectTo', new URLSearchParams({ redirectTo: callback.href }));
    expect(parsed.status, parsed.text).to.equal(200);
    expect((await session())['code']).to.be.a('string');

    const token = await call('PUT', '/api/token');
    expect(token.status, token.text).to.equal(200);
    const tokens = await session();
    const claims = await verifiedIdToken(idp.issuer, String(tokens['id_token']), CLIENT);
    expect(claims['nonce']).to.equal(tokens['nonce']);
    const first = await userinfo(idp.issuer, String(tokens['access_token']));
    expect(first.claims).to.include({ sub: claims.sub, preferred_username: IDENTITY.username });
    const fetched = await call('POST', '/api/userinfoDownload');
    expect(fetched.status, fetched.text).to.equal(200);
    expect(JSON.stringify(await session())).to.include(IDENTITY.email as string);

    await change({ response_type: RESPONSE_TYPE_REFRESH_TOKEN });
    const refresh = await call('PUT', '/api/token');
    expect(refresh.status, refresh.text).to.equal(200);
    const refreshed = await session();
    expect(refreshed['access_token']).to.be.a('string').and.not.equal(tokens['access_token']);
    expect(refreshed['refresh_token']).to.be.a('string').and.not.equal(tokens['refresh_token']);
    expect((await userinfo(idp.issuer, String(refreshed['access_token']))).claims['sub']).to.equal(claims.sub);
  });
});
