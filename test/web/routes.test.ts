import { expect } from 'chai';
import Koa from 'koa';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AppState } from '../../src/http/state.js';
import type { Asset, WebAssets } from '../../src/web/assets.js';
import { webRoutes } from '../../src/web/routes.js';

const html = (text: string): Asset => ({ type: 'text/html; charset=utf-8', body: Buffer.from(text) });
const ASSETS: WebAssets = {
  page: (name) => html(`<p>${name} page</p>`),
  file: (name) => (name === 'style.css' ? { type: 'text/css; charset=utf-8', body: Buffer.from('body{}') } : undefined),
  missing: [],
};

describe('web: the routes of the login and account pages', function () {
  let server: Server;
  let base: string;

  before(async function () {
    const app = new Koa<AppState>();
    // Stands in for the auth middleware: a request with `x-test-user` is logged in.
    app.use(async (ctx, next) => {
      const user = ctx.get('x-test-user');
      if (user !== '') ctx.state.principal = { username: user, groups: [], issuer: 'svc', kind: 'session', tokenId: 't', expiresAt: undefined };
      await next();
    });
    app.use(webRoutes(ASSETS).routes());
    server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(() => server.close());

  it('serves /login with the CSP, no framing, no referrer and no caching', async function () {
    const res = await fetch(`${base}/login?return_url=/x`);
    expect(res.status).to.equal(200);
    expect(await res.text()).to.equal('<p>login page</p>');
    expect(res.headers.get('content-security-policy')).to.equal(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    );
    expect(res.headers.get('x-frame-options')).to.equal('DENY');
    expect(res.headers.get('referrer-policy')).to.equal('no-referrer');
    expect(res.headers.get('cache-control')).to.equal('no-store');
  });

  it('sends / to the login page without a session, and serves the account page with one', async function () {
    const anonymous = await fetch(`${base}/`, { redirect: 'manual' });
    expect(anonymous.status).to.equal(302);
    expect(anonymous.headers.get('location')).to.equal('/login?return_url=%2F');
    const mine = await fetch(`${base}/`, { headers: { 'x-test-user': 'alice' } });
    expect(await mine.text()).to.equal('<p>account page</p>');
    expect(mine.headers.get('content-security-policy')).to.contain("frame-ancestors 'none'");
  });

  it('serves only the known files under /web/', async function () {
    const css = await fetch(`${base}/web/style.css`);
    expect(css.headers.get('content-type')).to.equal('text/css; charset=utf-8');
    expect(css.headers.get('x-content-type-options')).to.equal('nosniff');
    for (const path of ['/web/login.html', '/web/..%2Fpackage.json', '/web/nothing.js']) {
      expect((await fetch(`${base}${path}`)).status, path).to.equal(404);
    }
  });
});
