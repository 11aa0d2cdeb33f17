/** svc.token carries Secure when the request came over https, or when svc's configured url is https. */
import { expect } from 'chai';
import Koa from 'koa';
import request from 'supertest';
import { sessionCookieOf, setSessionCookie } from '../../src/http/cookies.js';

describe('session cookie', function () {
  const app = new Koa({ proxy: true });
  app.use((ctx) => {
    setSessionCookie(ctx, 'a.b.c', 2_000_000_000, ctx.get('x-configured-url') || 'http://svc.example.com');
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

  it('adds Secure over plain http when the configured url is https (TLS ended at an ingress)', async function () {
    const res = await request(app.callback()).get('/').set('X-Configured-Url', 'https://svc.example.com');
    expect(res.headers['set-cookie']).to.deep.equal(['svc.token=a.b.c; path=/; expires=Wed, 18 May 2033 03:33:20 GMT; samesite=lax; secure; httponly']);
  });
});

describe('sessionCookieOf (the gateway reads the cookie as Koa does)', () => {
  it('finds svc.token among other cookies, unquotes it, and ignores look-alikes and empty values', () => {
    expect(sessionCookieOf('a=1; svc.token=abc; b=2')).to.equal('abc');
    expect(sessionCookieOf('svc.token="abc"')).to.equal('abc');
    expect(sessionCookieOf('xsvc.token=abc')).to.equal(undefined);
    expect(sessionCookieOf('svcXtoken=abc')).to.equal(undefined);
    expect(sessionCookieOf('svc.token=')).to.equal(undefined);
    expect(sessionCookieOf(undefined)).to.equal(undefined);
  });
});
