/** The extension proxy (HTTP): what reaches the backend, and what comes back, header by header. */
import { expect } from 'chai';
import type { Echo } from './helpers.js';
import { call, echo, raw, server, useProxyFixture } from './proxy-fixture.js';

describe('extension proxy: forwarding and headers', function () {
  this.timeout(30_000);
  useProxyFixture();

  describe('forwarding', () => {
    it('sends method, body and query to the base path plus the rest of the path', async () => {
      const res = await call('/api/v1/extensions/echo/a/b%20c?x=1&y=%2F', 'carol', { 'content-type': 'text/plain' }, { method: 'POST', body: 'hello' });
      expect(res.status).to.equal(200);
      const seen = res.json() as unknown as Echo;
      expect(seen).to.include({ backend: 'echo', method: 'POST', url: '/base/a/b%20c?x=1&y=%2F', body: 'hello' });
    });

    it('sends a request without a further path to the configured URL as is', async () => {
      expect(((await call('/api/v1/extensions/echo', 'carol')).json() as unknown as Echo).url).to.equal('/base');
      expect(((await call('/api/v1/extensions/echo/', 'carol')).json() as unknown as Echo).url).to.equal('/base/');
    });

    it('never climbs above the base path with dot segments, encoded or not', async () => {
      expect((JSON.parse((await raw('/api/v1/extensions/echo/a/%2e%2E/b', 'carol')).text) as Echo).url).to.equal('/base/b');
      expect((JSON.parse((await raw('/api/v1/extensions/echo/a/b\\..\\c', 'carol')).text) as Echo).url).to.equal('/base/a/c');
      for (const path of ['/%2e%2e/secret', '/../secret', '/a/..%2f..%2fsecret', '/%2E./%2e%2e/x', '/.%2e/x', '/a%5c..%5c..%5cx', '/..\\x']) {
        const res = await raw(`/api/v1/extensions/echo${path}`, 'carol');
        expect(res.status, path).to.equal(400);
        expect(JSON.parse(res.text)).to.have.property('error', 'invalid_request');
      }
    });

    it('streams a large body both ways unchanged', async () => {
      const body = Buffer.alloc(8 * 1024 * 1024, 7);
      const res = await call('/api/v1/extensions/echo/upload', 'carol', {}, { method: 'PUT', body });
      expect((res.json() as unknown as Echo).bodyLength).to.equal(body.length);
    });
  });

  describe('headers', () => {
    it('never forwards Cookie, Authorization, spoofed X-Forwarded-* or Svc-* headers, and sets ours', async () => {
      const res = await call('/api/v1/extensions/echo/h', 'carol', {
        cookie: 'svc.token=stolen; other=1',
        'x-forwarded-host': 'evil.example.com',
        'x-forwarded-for': '6.6.6.6',
        'x-forwarded-proto': 'https',
        'x-forwarded-prefix': '/evil',
        forwarded: 'for=6.6.6.6',
        'svc-username': 'admin',
        'svc-user-groups': 'role:admin',
        'svc-project-name': 'evil',
        'x-custom': 'kept',
      });
      const seen = (res.json() as unknown as Echo).headers;
      expect(seen).to.not.have.any.keys('cookie', 'authorization', 'forwarded', 'svc-user-groups', 'svc-project-name', 'svc-application-name', 'x-forwarded-prefix', 'x-hop');
      expect(seen['x-forwarded-host']).to.equal(`127.0.0.1:${server.port}`);
      expect(seen['x-forwarded-for']).to.equal('127.0.0.1');
      expect(seen['x-forwarded-proto']).to.equal('http');
      expect(seen['svc-username']).to.equal('carol');
      expect(seen['x-custom']).to.equal('kept');
      expect(seen['host']).to.equal(`127.0.0.1:${echo.port}`);
    });

    it('drops the headers the Connection header names', async () => {
      const res = await raw('/api/v1/extensions/echo/h', 'carol', { connection: 'keep-alive, x-hop', 'x-hop': 'dropped', te: 'trailers' });
      expect((JSON.parse(res.text) as Echo).headers).to.not.have.any.keys('x-hop', 'te');
    });

    it('drops client headers spelled with underscores (CGI, WSGI and PHP read them as ours)', async () => {
      const res = await raw('/api/v1/extensions/echo/h', 'carol', { Svc_Username: 'admin', X_Forwarded_For: '6.6.6.6', Svc_User_Groups: 'role:admin', X_Custom: 'kept' });
      const seen = (JSON.parse(res.text) as Echo).headers;
      expect(seen).to.not.have.any.keys('svc_username', 'x_forwarded_for', 'svc_user_groups');
      expect(seen['svc-username']).to.equal('carol');
      expect(seen['x-forwarded-for']).to.equal('127.0.0.1');
      expect(seen['x_custom']).to.equal('kept');
    });

    it("drops response headers the backend's Connection header names", async () => {
      const res = await call('/api/v1/extensions/leaky/x', 'admin');
      expect(res.status).to.equal(200);
      expect(res.headers).to.not.have.any.keys('x-internal-addr');
      expect(res.headers['x-public']).to.equal('yes');
    });

    it('tells the backend the validated application and its project', async () => {
      const seen = ((await call('/api/v1/extensions/echo/h', 'alice', { 'svc-application-name': 'argocd/app-a' })).json() as unknown as Echo).headers;
      expect(seen['svc-application-name']).to.equal('argocd/app-a');
      expect(seen['svc-project-name']).to.equal('team-a');
    });

    it('drops a backend Set-Cookie for our own svc.* cookies and keeps the others', async () => {
      const res = await call('/api/v1/extensions/echo/c', 'carol');
      expect(res.headers['set-cookie']).to.equal('theirs=1; Path=/');
      expect(res.headers['x-backend']).to.equal('echo');
    });
  });
});
