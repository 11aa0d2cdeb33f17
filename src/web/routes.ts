/**
 * GET /login, GET / (the account page), GET /auth/logout (the confirmation of a logout, which
 * only its form's POST does), GET /web/<file> and GET /favicon.ico: svc's own pages (docs/ui.md).
 * Thin: the pages are static and talk to the JSON API (/api/v1/session, /api/v1/account,
 * /api/v1/settings) themselves; the only decision here is that `/` without a valid session goes
 * to the login page, which brings the browser back afterwards.
 */
import type Router from '@koa/router';
import { allow, declaredRouter } from '../http/route-access.js';
import type Koa from 'koa';
import { setPageHeaders } from '../http/security-headers.js';
import type { AppState } from '../http/state.js';
import type { Asset, WebAssets } from './assets.js';

export function webRoutes(assets: WebAssets): Router<AppState> {
  const router = declaredRouter();

  router.get('/login', allow('anyone'), function loginPage(ctx) {
    send(ctx, assets.page('login'));
  });

  router.get('/', allow('anyone', 'no caller: redirected to /login'), function accountPage(ctx) {
    if (ctx.state.principal === undefined) {
      ctx.set('Cache-Control', 'no-store');
      ctx.redirect(`/login?return_url=${encodeURIComponent('/')}`);
      return;
    }
    send(ctx, assets.page('account'));
  });

  // A link from any site lands here and logs no one out: the form posts from svc's own origin.
  router.get('/auth/logout', allow('anyone'), function logoutPage(ctx) {
    send(ctx, assets.page('logout'));
  });

  // Browsers ask for /favicon.ico whatever the pages link: the same SVG, which they all take.
  router.get('/favicon.ico', allow('anyone'), function favicon(ctx) {
    const asset = assets.file('favicon.svg');
    if (asset === undefined) return;
    ctx.type = asset.type;
    ctx.set({ 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'public, max-age=86400' });
    ctx.body = asset.body;
  });

  router.get('/web/:file', allow('anyone'), function webFile(ctx) {
    const asset = assets.file(ctx.params['file'] ?? '');
    if (asset === undefined) return;   // the app's JSON 404
    ctx.type = asset.type;
    ctx.set({ 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'no-cache' });
    ctx.body = asset.body;
  });

  return router;
}

function send(ctx: Koa.ParameterizedContext<AppState>, asset: Asset): void {
  setPageHeaders(ctx, 'svc');
  ctx.type = asset.type;
  ctx.body = asset.body;
}
