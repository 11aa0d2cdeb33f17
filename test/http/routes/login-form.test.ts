/**
 * POST /login (src/http/routes/login-form.ts): the login page's form posted as a plain form, as
 * a browser does when the page's script does not take it. On a running server: the page's form
 * posts there, the password is taken from the body and never put in a URL, the answer is a
 * redirect with the session cookie or back to the page saying why, and only svc's own origin may
 * post it (login CSRF).
 */
import { expect } from 'chai';
import { PASSWORDS } from '../../helpers/accounts-fixture.js';
import { accountsServer } from '../../helpers/accounts-server.js';
import { cleanUpTempDirs } from '../../helpers/temp-dir.js';

describe('HTTP POST /login: the login form without its script', function () {
  cleanUpTempDirs();
  this.timeout(20_000);
  const svc = accountsServer();

  /** Posts `fields` as a browser posts a form, from svc's origin or `from` (null: no Origin header). */
  function post(fields: Record<string, string>, from?: string | null): Promise<Response> {
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
    const origin = from === undefined ? svc.base : from;
    if (origin !== null) headers['origin'] = origin;
    return fetch(`${svc.base}/login`, { method: 'POST', redirect: 'manual', headers, body: new URLSearchParams(fields).toString() });
  }

  it("serves the page's password form with method post, action /login and a referrer policy that keeps Origin", async function () {
    const html = await (await fetch(`${svc.base}/login`)).text();
    const form = /<form id="local-login"[^>]*>/.exec(html)?.[0];
    expect(form).to.equal('<form id="local-login" method="post" action="/login" hidden>');
    expect(html).to.contain('<meta name="referrer" content="same-origin">');
    expect(html).to.match(/<input type="hidden" id="return-url" name="return_url" value="\/">/);
  });

  it('logs in from a plain form post: 303 to return_url with the session cookie, which then signs requests in', async function () {
    const res = await post({ username: 'alice', password: PASSWORDS.alice, return_url: '/apps?x=1' });
    expect(res.status).to.equal(303);
    expect(res.headers.get('location')).to.equal('/apps?x=1');
    expect(res.headers.get('cache-control')).to.equal('no-store');
    const cookie = /^svc\.token=[^;]+/.exec(res.headers.get('set-cookie') ?? '')?.[0];
    expect(cookie, 'the session cookie').to.be.a('string');
    const info = await (await fetch(`${svc.base}/api/v1/session/userinfo`, { headers: { cookie: cookie ?? '' } })).json() as Record<string, unknown>;
    expect(info).to.deep.include({ loggedIn: true, username: 'alice' });
  });

  it('sends a refused login back to the page with the reason and return_url, never the password, and no cookie', async function () {
    const res = await post({ username: 'alice', password: 'wrong-password-xyz', return_url: '/apps' });
    expect(res.status).to.equal(303);
    expect(res.headers.get('location')).to.equal('/login?error=invalid_credentials&return_url=%2Fapps');
    expect(res.headers.get('set-cookie')).to.equal(null);
    expect(svc.server.logs()).not.to.contain('wrong-password-xyz');
  });

  it('goes back to / for a return_url off svc, as every login does', async function () {
    const res = await post({ username: 'alice', password: PASSWORDS.alice, return_url: '//evil.example/x' });
    expect(res.headers.get('location')).to.equal('/');
  });

  it('refuses a form posted from another origin or without Origin: no login, no cookie', async function () {
    for (const origin of ['https://evil.example', 'null', null]) {
      const res = await post({ username: 'alice', password: PASSWORDS.alice }, origin);
      expect(res.status, String(origin)).to.equal(403);
      expect(res.headers.get('set-cookie'), String(origin)).to.equal(null);
      expect(await res.json()).to.deep.equal({ error: 'permission_denied', message: "the login form is taken only from svc's own login page: open /login and log in there" });
    }
  });

  it('refuses a body that is not a form, naming the type it takes', async function () {
    const res = await fetch(`${svc.base}/login`, { method: 'POST', headers: { origin: svc.base, 'content-type': 'application/json' }, body: JSON.stringify({ username: 'alice', password: PASSWORDS.alice }) });
    expect(res.status).to.equal(400);
    expect(await res.json()).to.deep.equal({ error: 'invalid_request', message: 'the login form must be posted as application/x-www-form-urlencoded' });
  });
});
