/** svc.token carries Secure when the request came over https (here: through a trusted proxy). */
import { expect } from 'chai';
import Koa from 'koa';
import request from 'supertest';
import { setSessionCookie } from '../../src/http/cookies.js';

describe('session cookie', function () {
  const app = new Koa({ proxy: true });
  app.use((ctx) => {
    setSessionCookie(ctx, 'a.b.c', 2_000_000_000);
    ctx.body = {};
  });

  it('is HttpOnly, SameSite=Lax, path / and expires with the token', async function () {
    const res = await request(app.callback()).get('/');
    expect(res.headers['set-cookie']).to.deep.equal(['svc.token=a.b.c; path=/; expires=Wed, 18 May 2033 03:33:20 GMT; samesite=lax; httponly']);
  });

  it('adds Secure over https', async function () {
    const res = await request(app.callback()).get('/').set('X-Forwarded-Proto', 'https');
    expect(res.headers['set-cookie']).to.deep.equal(['svc.token=a.b.c; path=/; expires=Wed, 18 May 2033 03:33:20 GMT; samesite=lax; secure; httponly']);
  });
});
