/**
 * A Python relying party on authlib (Debian's python3-authlib 1.2, test/fixtures/foreign/authlib_rp.py),
 * a confidential static client of svc's bundled provider (issue 53): the code flow with PKCE
 * S256, state and nonce, with client_secret_basic and with client_secret_post; the ID token
 * validated by authlib against the JWKS; userinfo; a refresh that rotates the refresh token;
 * RP-initiated logout back to the registered URI with the RP's state, which ends the provider
 * session. The browser's part is the test's own HTTP client.
 */
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { FormBrowser, isPage } from '../helpers/form-browser.js';
import { IDENTITY, logInAt, startForeignIdp, verifiedIdToken, type ForeignIdp } from '../helpers/foreign-idp.js';
import { startForeign, type ForeignProcess } from '../helpers/foreign-process.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const SCRIPT = fileURLToPath(new URL('../fixtures/foreign/authlib_rp.py', import.meta.url));
const CLIENT = 'authlib';
const SECRET = 'authlib-client-secret-0123456789';
const REDIRECT = 'http://127.0.0.1:8000/auth';
const LOGGED_OUT = 'http://127.0.0.1:8000/logged-out';

interface RpResult {
  id_token_claims: Record<string, unknown>;
  id_token: string;
  access_token: string;
  refresh_token: string;
  userinfo: Record<string, unknown>;
  refreshed: { access_token: string; refresh_token: string | null; id_token_iat: number | null };
  refreshed_userinfo: Record<string, unknown>;
  logout_state_sent: string;
  logout_state_returned: string | null;
}

describe('e2e: a relying party on authlib with the bundled identity provider (a confidential static client)', function () {
  cleanUpTempDirs();
  this.timeout(60_000);
  let idp: ForeignIdp;

  before(async function () {
    idp = await startForeignIdp([{ id: CLIENT, name: 'Python app', secret: '$authlib.clientSecret', redirectURIs: [REDIRECT], postLogoutRedirectURIs: [LOGGED_OUT] }], { 'authlib.clientSecret': SECRET });
  });
  after(async function () {
    await idp?.close();
  });

  /** The JSON line the script prints next (after `seen` lines). */
  async function line(rp: ForeignProcess, seen: number): Promise<Record<string, unknown>> {
    const pattern = new RegExp(`^(?:[^\\n]*\\n){${seen}}(\\{[^\\n]*\\})\\n`);
    for (let waited = 0; ; waited += 50) {
      const match = pattern.exec(rp.stdout());
      if (match !== null) return JSON.parse(match[1] as string) as Record<string, unknown>;
      if (rp.child.exitCode !== null || waited > 20_000) throw new Error(`the relying party printed no line ${seen + 1}:\n${rp.output()}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  async function run(method: 'client_secret_basic' | 'client_secret_post'): Promise<{ result: RpResult; browser: FormBrowser; authorize: string }> {
    const rp = startForeign('/usr/bin/python3', [SCRIPT, idp.issuer, CLIENT, SECRET, method, REDIRECT, LOGGED_OUT], {}, { stdin: 'pipe' });
    try {
      const browser = new FormBrowser();
      const authorize = String((await line(rp, 0))['authorize']);
      const url = new URL(authorize);
      expect(url.searchParams.get('code_challenge_method')).to.equal('S256');
      expect(url.searchParams.get('nonce')).to.be.a('string');
      const callback = await logInAt(authorize, REDIRECT, browser);
      expect(callback.searchParams.get('iss'), 'RFC 9207').to.equal(idp.issuer);
      rp.child.stdin?.write(`${callback.href}\n`);
      const logout = String((await line(rp, 1))['logout']);
      const confirm = await browser.go(logout, LOGGED_OUT);
      if (!isPage(confirm)) throw new Error(`expected the logout page, got a redirect to ${confirm.href}`);
      const back = await browser.submit(confirm, { logout: 'yes' }, LOGGED_OUT);
      if (isPage(back)) throw new Error(`expected the redirect back, got ${back.status}: ${back.html.slice(0, 300)}`);
      rp.child.stdin?.write(`${back.href}\n`);
      const result = (await line(rp, 2)) as unknown as RpResult;
      expect(await rp.exited(), rp.output()).to.equal(0);
      return { result, browser, authorize };
    } finally {
      await rp.stop();
    }
  }

  for (const method of ['client_secret_basic', 'client_secret_post'] as const) {
    it(`logs in with ${method}: a valid ID token, userinfo, a refresh, and a logout that ends the provider session`, async function () {
      const { result, browser, authorize } = await run(method);
      // authlib validated the ID token (signature, iss, aud, nonce, at_hash); the test checks it again against the JWKS.
      const claims = await verifiedIdToken(idp.issuer, result.id_token, CLIENT);
      expect(result.id_token_claims).to.include({ iss: idp.issuer, aud: CLIENT, sub: claims.sub });
      expect(result.userinfo).to.include({ sub: claims.sub, preferred_username: IDENTITY.username, email: IDENTITY.email });
      // The refresh rotated the refresh token, gave a newer ID token and an access token userinfo accepts.
      expect(result.refreshed.refresh_token).to.be.a('string').and.not.equal(result.refresh_token);
      expect(result.refreshed.access_token).to.not.equal(result.access_token);
      expect(result.refreshed.id_token_iat).to.be.at.least(Number(claims.iat));
      expect(result.refreshed_userinfo['sub']).to.equal(claims.sub);
      // The logout returned the RP's state to its registered URI, and ended the provider session:
      // the same browser is asked for its password again.
      expect(result.logout_state_returned).to.equal(result.logout_state_sent);
      const again = await browser.go(authorize, REDIRECT);
      expect(isPage(again) && again.html.includes('name="password"'), 'the password form again').to.equal(true);
    });
  }
});
