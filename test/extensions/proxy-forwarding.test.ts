/** The extension proxy (HTTP): what reaches the backend, and what comes back, header by header. */
import { createHash, randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { request } from 'undici';
import type { Echo } from './helpers.js';
import { call, echo, raw, server, token, useProxyFixture } from './proxy-fixture.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

describe('extension proxy: forwarding and headers', function () {
  cleanUpTempDirs();
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
      // Random bytes: a lost, repeated or reordered chunk changes the digest (a constant fill would not show it).
      const body = randomBytes(8 * 1024 * 1024);
      const digest = createHash('sha256').update(body).digest('hex');
      const up = await call('/api/v1/extensions/echo/upload', 'carol', {}, { method: 'PUT', body });
      expect(up.json()).to.include({ bodyLength: body.length, bodySha256: digest });
      // The backend sends the same bytes back: the response is streamed through unchanged too.
      const back = await request(`${server.url}/api/v1/extensions/echo/mirror`, { method: 'PUT', body, headers: { authorization: `Bearer ${token['carol']}`, 'x-echo-body': 'raw' } });
      expect(back.statusCode).to.equal(200);
      const returned = Buffer.from(await back.body.arrayBuffer());
      expect(returned.length).to.equal(body.length);
      expect(createHash('sha256').update(returned).digest('hex')).to.equal(digest);
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

    it('never forwards X-Remote-User, True-Client-IP, X-Client-IP, X-Original-URL or X-Rewrite-URL, in either spelling', async () => {
      const res = await raw('/api/v1/extensions/echo/h', 'carol', {
        'X-Remote-User': 'admin',
        'True-Client-IP': '6.6.6.6',
        'X-Client-IP': '6.6.6.6',
        'X-Original-URL': '/admin',
        'X-Rewrite-URL': '/admin',
        X_Remote_User: 'admin',
        X_Original_URL: '/admin',
      });
      const seen = (JSON.parse(res.text) as Echo).headers;
      expect(seen).to.not.have.any.keys('x-remote-user', 'true-client-ip', 'x-client-ip', 'x-original-url', 'x-rewrite-url', 'x_remote_user', 'x_original_url');
      expect(seen['svc-username']).to.equal('carol');
    });

    it('never forwards the identity headers other authenticating proxies send, which backends trust', async () => {
      const identity = [
        'X-WEBAUTH-USER', 'X-WEBAUTH-EMAIL', 'X-WEBAUTH-GROUPS', 'Remote-User', 'Remote-Groups', 'Remote-Email', 'Remote-Name',
        'X-Auth-Request-User', 'X-Auth-Request-Email', 'X-Auth-Request-Preferred-Username', 'X-Auth-Request-Groups',
        'X-User', 'X-Email', 'X-Forwarded-User', 'X-Forwarded-Email', 'X-Forwarded-Preferred-Username', 'X-Forwarded-Groups',
        'X-Remote-Group', 'X-Remote-Extra-Scopes', 'X-Auth-User', 'X-Proxy-User', 'X-Authenticated-User', 'X-Consumer-Username',
        'X-Amzn-Oidc-Identity', 'X-Goog-Authenticated-User-Email', 'X-MS-Client-Principal-Name', 'Cf-Access-Authenticated-User-Email',
        'X_WEBAUTH_USER', 'Remote_User',
      ];
      const res = await raw('/api/v1/extensions/echo/h', 'carol', { ...Object.fromEntries(identity.map((h) => [h, 'admin'])), 'X-Userland': 'kept' });
      const seen = (JSON.parse(res.text) as Echo).headers;
      expect(seen).to.not.have.any.keys(...identity.map((h) => h.toLowerCase()));
      expect(Object.entries(seen).filter(([, v]) => v === 'admin')).to.deep.equal([]);
      expect(seen['x-userland']).to.equal('kept');
      expect(seen['svc-username']).to.equal('carol');
    });

    it('answers with Content-Security-Policy: sandbox, the entry\'s own policy beside the backend\'s, or none when turned off', async () => {
      const sandboxed = await call('/api/v1/extensions/echo/h', 'admin');
      expect(sandboxed.status).to.equal(200);
      expect(sandboxed.headers['content-security-policy']).to.equal('sandbox');
      const withBackends = await request(`${server.url}/api/v1/extensions/ui/x`, { headers: { authorization: `Bearer ${token['admin']}`, 'x-csp': 'default-src none' } });
      await withBackends.body.text();
      // Both policies reach the browser, which enforces each: the backend's cannot loosen ours.
      expect(withBackends.headers['content-security-policy']).to.deep.equal(['default-src none', 'sandbox allow-scripts']);
      const off = await call('/api/v1/extensions/trusted/h', 'admin');
      expect(off.status).to.equal(200);
      expect(off.headers).to.not.have.any.keys('content-security-policy');
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

    it("drops a backend Set-Cookie for svc's own svc.* cookies and the identity provider's, and keeps the others", async () => {
      const res = await call('/api/v1/extensions/echo/c', 'carol');
      expect(res.headers['set-cookie']).to.equal('theirs=1; Path=/');
      expect(res.headers['x-backend']).to.equal('echo');
    });
  });
});
