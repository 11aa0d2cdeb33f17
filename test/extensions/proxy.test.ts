import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import { request } from 'undici';
import { waitFor } from '../helpers/accounts-fixture.js';
import { application, clusterSecret, tempConfigDir } from '../helpers/manifests.js';
import { freePort } from '../helpers/peers.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { echoBackend, login, rawExchange, rewriteExtensionConfig, startBackend, storeFiles, type Backend, type Echo } from './helpers.js';

const ACCOUNTS = ['alice', 'bob', 'carol'];
const POLICY = [
  'p, role:team-a, extensions, *, team-a/*, allow',
  'g, alice, role:team-a',
  'p, carol, extensions, *, */echo, allow',
  'p, carol, extensions, *, */multi, allow',
].join('\n');

describe('extension proxy (HTTP)', function () {
  this.timeout(30_000);
  let server: TestServer;
  let dir: string;
  let echo: Backend, inCluster: Backend, prod: Backend, idle: Backend, reset: Backend, leaky: Backend, ownId: Backend, chunky: Backend, flood: Backend;
  /** When the flood backend saw its response closed (the proxy let go of it), by request. */
  const floodClosed: number[] = [];
  let refusedPort: number;
  const idleSockets = new Set<Socket>();
  let idleWaiting = 0;
  let token: Record<string, string>;
  let extensions: (overrides?: { echoUrl?: string }) => unknown;

  before(async () => {
    [echo, inCluster, prod] = await Promise.all([echoBackend('echo'), echoBackend('in-cluster'), echoBackend('prod')]);
    idle = await startBackend((_req, res) => {
      // Accepts, never answers; counts the requests it holds (a spare pooled connection is no leak).
      idleWaiting++;
      res.once('close', () => idleWaiting--);
    });
    idle.server.on('connection', (s: Socket) => idleSockets.add(s));
    leaky = await startBackend((req, res) => {
      const csp = req.headers['x-csp'];
      res.writeHead(200, { connection: 'keep-alive, X-Internal-Addr', 'x-internal-addr': '10.1.2.3:8080', 'x-public': 'yes', ...(typeof csp === 'string' ? { 'content-security-policy': csp } : {}) });
      res.end('ok');
    });
    reset = await startBackend((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('first part of the body, then the backend dies');
      setTimeout(() => res.socket?.resetAndDestroy(), 50);
    });
    ownId = await startBackend((_req, res) => {
      res.writeHead(200, { 'X-Request-Id': 'from-backend' });
      res.end('ok');
    });
    chunky = await startBackend((req, res) => {
      if (req.url === '/sized') {
        // One declared length, written in a thousand pieces over several ticks.
        res.writeHead(200, { 'content-length': '10000' });
        let sent = 0;
        const more = (): void => {
          for (let i = 0; i < 100 && sent < 1000; i++, sent++) res.write('0123456789');
          if (sent < 1000) setImmediate(more);
          else res.end();
        };
        more();
        return;
      }
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('abc');
      setTimeout(() => {
        res.write('abc');
        res.end('abc');
      }, 20);
    });
    flood = await startBackend((_req, res) => {
      // Endless: writes whenever the connection drains, so only the proxy letting go ends it.
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      const chunk = Buffer.alloc(64 * 1024, 120);
      const pump = (): void => {
        while (!res.destroyed && res.write(chunk));
      };
      res.on('drain', pump);
      res.once('close', () => floodClosed.push(Date.now()));
      pump();
    });
    refusedPort = await freePort();
    extensions = (overrides = {}) => ({
      extensions: [
        { name: 'echo', enabled: true, backend: { services: [{ url: overrides.echoUrl ?? `${echo.url}/base` }] } },
        { name: 'off', enabled: false, backend: { services: [{ url: echo.url }] } },
        { name: 'ui', enabled: true, contentSecurityPolicy: 'sandbox allow-scripts', backend: { services: [{ url: leaky.url }] } },
        { name: 'trusted', enabled: true, contentSecurityPolicy: false, backend: { services: [{ url: echo.url }] } },
        { name: 'multi', enabled: true, backend: { services: [{ url: inCluster.url, clusterName: 'in-cluster' }, { url: `${prod.url}/p/`, clusterName: 'prod' }] } },
        { name: 'idle', enabled: true, backend: { idleConnTimeout: '1s', services: [{ url: idle.url }] } },
        { name: 'idle-long', enabled: true, backend: { idleConnTimeout: '30s', services: [{ url: idle.url }] } },
        { name: 'reset', enabled: true, backend: { services: [{ url: reset.url }] } },
        { name: 'down', enabled: true, backend: { services: [{ url: `http://127.0.0.1:${refusedPort}` }] } },
        { name: 'leaky', enabled: true, backend: { services: [{ url: leaky.url }] } },
        { name: 'own-id', enabled: true, backend: { services: [{ url: ownId.url }] } },
        { name: 'chunky', enabled: true, backend: { services: [{ url: chunky.url }] } },
        { name: 'flood', enabled: true, backend: { idleConnTimeout: '1s', services: [{ url: flood.url }] } },
      ],
    });
    dir = tempConfigDir(
      storeFiles({
        extensionConfig: extensions(),
        policy: POLICY,
        accounts: ACCOUNTS,
        extra: {
          'apps.yaml': [
            application('argocd', 'app-a', 'team-a', { name: 'in-cluster' }),
            application('argocd', 'app-b', 'team-a', { server: 'https://prod.example.com' }),
            application('argocd', 'app-x', 'team-a', { name: 'nowhere' }),
            application('argocd', 'app-c', 'team-c', { name: 'in-cluster' }),
          ].join('---\n'),
          'cluster.yaml': clusterSecret('cluster-prod', 'prod', 'https://prod.example.com/'),
        },
      }),
    );
    server = await startTestServer(dir);
    token = Object.fromEntries(await Promise.all(['admin', ...ACCOUNTS].map(async (u) => [u, await login(server, u)] as const)));
  });

  after(async () => {
    for (const s of idleSockets) s.destroy();
    await server.close();
    await Promise.all([echo, inCluster, prod, idle, reset, leaky, ownId, chunky, flood].map((b) => b.close()));
  });

  async function call(path: string, user: string | undefined, headers: Record<string, string> = {}, init: { method?: string; body?: string | Buffer } = {}) {
    const res = await request(`${server.url}${path}`, {
      method: (init.method ?? 'GET') as 'GET',
      headers: { ...(user !== undefined ? { authorization: `Bearer ${token[user]}` } : {}), ...headers },
      body: init.body ?? null,
    });
    const text = await res.body.text();
    return { status: res.statusCode, headers: res.headers, text, json: () => JSON.parse(text) as Record<string, unknown> };
  }

  /** node:http sends the path exactly as written (fetch and undici normalise `%2e%2e` first). */
  function raw(path: string, user: string, headers: Record<string, string> = {}): Promise<{ status: number; text: string }> {
    return new Promise((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port: server.port, path, headers: { authorization: `Bearer ${token[user]}`, ...headers } }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      });
      req.on('error', reject);
      req.end();
    });
  }

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

    it('drops a backend Set-Cookie for our own svc.* cookies and keeps the others', async () => {
      const res = await call('/api/v1/extensions/echo/c', 'carol');
      expect(res.headers['set-cookie']).to.equal('theirs=1; Path=/');
      expect(res.headers['x-backend']).to.equal('echo');
    });
  });

  describe('checks, in order', () => {
    it('404 for an unknown or disabled extension, before authentication', async () => {
      const unknown = await call('/api/v1/extensions/nope/x', undefined);
      expect(unknown.status).to.equal(404);
      expect(unknown.json()).to.deep.equal({ error: 'extension_not_found', message: "extension 'nope' is not configured" });
      const off = await call('/api/v1/extensions/off', 'admin');
      expect(off.status).to.equal(404);
      expect(off.json()).to.deep.equal({ error: 'extension_not_found', message: "extension 'off' is not enabled" });
    });

    it('401 without a valid token', async () => {
      expect((await call('/api/v1/extensions/echo', undefined)).status).to.equal(401);
      const bad = await call('/api/v1/extensions/echo', undefined, { authorization: 'Bearer not-a-token' });
      expect(bad.status).to.equal(401);
      expect(bad.json()['error']).to.equal('unauthenticated');
    });

    it('400 for a malformed application header, 403 for an unknown application', async () => {
      for (const name of ['no-slash', 'argocd/a..b', 'argocd/a.-b', 'argocd/-a', 'Argocd/a', `${'n'.repeat(64)}/a`]) {
        const bad = await call('/api/v1/extensions/echo', 'alice', { 'svc-application-name': name });
        expect(bad.status, name).to.equal(400);
        expect(bad.json()['error'], name).to.equal('invalid_request');
      }
      const missing = await call('/api/v1/extensions/echo', 'alice', { 'svc-application-name': 'argocd/ghost' });
      expect(missing.status).to.equal(403);
      expect(missing.json()).to.deep.equal({ error: 'application_not_found', message: "application 'argocd/ghost' does not exist" });
    });

    it("403 naming the missing rule; the project comes from the application", async () => {
      const other = await call('/api/v1/extensions/echo', 'alice', { 'svc-application-name': 'argocd/app-c' });
      expect(other.status).to.equal(403);
      expect(other.json()).to.deep.equal({
        error: 'permission_denied',
        message: "'alice' may not use extension 'echo': no rights rule allows extensions, *, team-c/echo",
      });
      expect((await call('/api/v1/extensions/echo', 'bob', { 'svc-application-name': 'argocd/app-a' })).status).to.equal(403);
      expect((await call('/api/v1/extensions/echo', 'admin', { 'svc-application-name': 'argocd/app-c' })).status).to.equal(200);
    });

    it('without the header the object is */<name>: only an every-project rule allows it', async () => {
      const alice = await call('/api/v1/extensions/echo', 'alice');
      expect(alice.status).to.equal(403);
      expect(alice.json()['message']).to.include('extensions, *, */echo');
      expect((await call('/api/v1/extensions/echo', 'carol')).status).to.equal(200);
    });
  });

  describe('backend per cluster', () => {
    it('chooses by destination name and by server through the cluster secret', async () => {
      const a = (await call('/api/v1/extensions/multi/x', 'alice', { 'svc-application-name': 'argocd/app-a' })).json() as unknown as Echo;
      expect(a).to.include({ backend: 'in-cluster', url: '/x' });
      const b = (await call('/api/v1/extensions/multi/x', 'alice', { 'svc-application-name': 'argocd/app-b' })).json() as unknown as Echo;
      expect(b).to.include({ backend: 'prod', url: '/p/x' });
    });

    it('400 without the application header, 404 no_backend for a cluster without a backend', async () => {
      const none = await call('/api/v1/extensions/multi/x', 'carol');
      expect(none.status).to.equal(400);
      expect(none.json()['message']).to.include('Svc-Application-Name');
      const nowhere = await call('/api/v1/extensions/multi/x', 'alice', { 'svc-application-name': 'argocd/app-x' });
      expect(nowhere.status).to.equal(404);
      expect(nowhere.json()).to.deep.equal({ error: 'no_backend', message: "extension 'multi' has no backend for cluster 'nowhere' (application 'argocd/app-x')" });
    });
  });

  describe('backend failures', () => {
    it('502 when the backend refuses the connection, without its address', async () => {
      const res = await call('/api/v1/extensions/down', 'admin');
      expect(res.status).to.equal(502);
      expect(res.json()['error']).to.equal('backend_unreachable');
      expect(res.text).to.not.include(String(refusedPort));
    });

    it('408 when the backend stays idle longer than idleConnTimeout (1s), within 2s', async () => {
      const start = Date.now();
      const res = await call('/api/v1/extensions/idle', 'admin');
      const took = Date.now() - start;
      expect(res.status).to.equal(408);
      expect(res.json()['error']).to.equal('backend_idle');
      expect(took).to.be.within(900, 2000);
    });

    it('cuts the client connection when the backend resets mid-response, and keeps serving', async () => {
      const res = await request(`${server.url}/api/v1/extensions/reset`, { headers: { authorization: `Bearer ${token['admin']}` } });
      expect(res.statusCode).to.equal(200);
      let failed = false;
      try {
        await res.body.text();
      } catch {
        failed = true;
      }
      expect(failed, 'a truncated body must not look complete').to.equal(true);
      expect((await call('/api/v1/extensions/echo', 'admin')).status).to.equal(200);
    });

    it('survives clients that leave before the backend answers, or during authentication, and releases the backend connections', async () => {
      for (let i = 0; i < 5; i++) {
        const ac = new AbortController();
        const pending = request(`${server.url}/api/v1/extensions/idle`, { headers: { authorization: `Bearer ${token['admin']}` }, signal: ac.signal });
        setTimeout(() => ac.abort(), 50);
        await pending.then(() => undefined, () => undefined);
      }
      // A fresh token is verified asynchronously, so these clients are gone before forward() starts.
      for (let i = 0; i < 10; i++) {
        const fresh = await login(server, 'admin');
        const socket = connect(server.port, '127.0.0.1');
        socket.on('error', () => undefined);
        socket.on('connect', () => socket.end(`GET /api/v1/extensions/idle HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${fresh}\r\n\r\n`, () => socket.destroy()));
      }
      // Well below idleConnTimeout (1s), which would release them anyway.
      await new Promise((r) => setTimeout(r, 400));
      expect(idleWaiting, 'backend requests still held for departed clients').to.equal(0);
      expect((await call('/api/v1/extensions/echo', 'admin')).status).to.equal(200);
    });
  });

  describe('clients that misbehave', () => {
    it('answers pipelined requests, in order', async () => {
      const get = (path: string, close = false) => `GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token['admin']}\r\n${close ? 'Connection: close\r\n' : ''}\r\n`;
      const res = await rawExchange(server.port, get('/api/v1/extensions/echo/first') + get('/api/v1/extensions/echo/second', true));
      expect(res.closed).to.equal(true);
      const urls = [...res.data.matchAll(/"url":"([^"]*)"/g)].map((m) => m[1]);
      expect(urls).to.deep.equal(['/base/first', '/base/second']);
    });

    /** Pipelines a request that the idle backend never answers (30 s) and one to the endless flood backend. */
    async function pipelineBehindSlowAnswer(): Promise<{ socket: Socket; start: number }> {
      floodClosed.length = 0;
      const socket = connect(server.port, '127.0.0.1');
      socket.on('error', () => undefined);
      await new Promise((resolve) => socket.once('connect', resolve));
      const get = (path: string) => `GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token['admin']}\r\n\r\n`;
      const start = Date.now();
      socket.write(get('/api/v1/extensions/idle-long') + get('/api/v1/extensions/flood'));
      return { socket, start };
    }

    it('releases the backend of a pipelined request queued behind a slow answer when the client leaves', async () => {
      const { socket, start } = await pipelineBehindSlowAnswer();
      await new Promise((r) => setTimeout(r, 300));
      expect(floodClosed, 'the queued exchange runs meanwhile').to.have.length(0);
      socket.destroy();
      await waitFor(() => floodClosed.length === 1, 'the queued backend response to close', 5_000);
      expect((floodClosed[0] ?? 0) - start, 'at once, not at idleConnTimeout').to.be.below(900);
    });

    it('closes a pipelined connection whose queued answer waits past idleConnTimeout (1s), releasing the backend', async () => {
      const { socket, start } = await pipelineBehindSlowAnswer();
      const closed = new Promise<number>((resolve) => socket.once('close', () => resolve(Date.now())));
      await waitFor(() => floodClosed.length === 1, 'the queued backend response to close', 5_000);
      expect((floodClosed[0] ?? 0) - start).to.be.within(900, 3_500);
      expect((await closed) - start).to.be.below(4_000);
    });

    it('cuts a client that reads nothing for idleConnTimeout (1s), releasing the backend', async () => {
      floodClosed.length = 0;
      const socket = connect(server.port, '127.0.0.1');
      socket.on('error', () => undefined);
      await new Promise((resolve) => socket.once('connect', resolve));
      socket.pause(); // never reads: the proxy's writes back up, then the backend's
      const start = Date.now();
      socket.write(`GET /api/v1/extensions/flood HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token['admin']}\r\n\r\n`);
      await waitFor(() => floodClosed.length === 1, 'the backend response to close', 5_000);
      socket.destroy();
      expect((floodClosed[0] ?? 0) - start).to.be.within(900, 3_500);
    });

    it('counts a client that left before any answer as 499, not 200', async () => {
      const series = ['svc_extension_requests_total{extension="idle",status="499"}', 'svc_extension_requests_total{extension="idle",status="200"}'];
      const before = await metricValues(series);
      const ac = new AbortController();
      const pending = request(`${server.url}/api/v1/extensions/idle`, { headers: { authorization: `Bearer ${token['admin']}` }, signal: ac.signal });
      setTimeout(() => ac.abort(), 100);
      await pending.then(() => undefined, () => undefined);
      await waitFor(async () => ((await metricValues(series))[0] ?? 0) > (before[0] ?? 0), 'the 499 to be counted', 2_000);
      const after = await metricValues(series);
      expect([(after[0] ?? 0) - (before[0] ?? 0), (after[1] ?? 0) - (before[1] ?? 0)]).to.deep.equal([1, 0]);
    });

    it('takes the cookie for a request that may change something only from svc\'s own origin (CSRF)', async () => {
      const post = (origin: string | undefined, method = 'POST') =>
        call('/api/v1/extensions/echo/do', undefined, { cookie: `svc.token=${token['carol']}`, ...(origin !== undefined ? { origin } : {}) }, method === 'GET' ? { method } : { method, body: 'x=1' });
      const sibling = await post('https://evil.example.com');
      expect(sibling.status).to.equal(401);
      expect(sibling.json()['message']).to.equal("the svc.token cookie does not sign in a POST from origin 'https://evil.example.com': send it from svc's own pages, or send a bearer token");
      expect((await post(undefined)).status, 'no Origin').to.equal(401);
      expect((await post(server.url)).status, 'own origin').to.equal(200);
      expect((await post('https://evil.example.com', 'GET')).status, 'a GET reads').to.equal(200);
    });
  });

  describe('the request around the exchange (answered before the app, as the app would)', () => {
    it('gives every answer a request id: a sane client one is kept, the backend may set its own', async () => {
      const proxied = await call('/api/v1/extensions/echo/x', 'admin', { 'x-request-id': 'trace-123' });
      expect(proxied.headers['x-request-id']).to.equal('trace-123');
      const fresh = await call('/api/v1/extensions/echo/x', 'admin', { 'x-request-id': 'not sane!' });
      expect(fresh.headers['x-request-id']).to.match(/^[0-9a-f-]{36}$/);
      const refused = await call('/api/v1/extensions/echo/x', undefined, { 'x-request-id': 'trace-456' });
      expect(refused.headers['x-request-id']).to.equal('trace-456');
      const own = await call('/api/v1/extensions/own-id/x', 'admin', { 'x-request-id': 'trace-789' });
      expect(own.headers['x-request-id']).to.equal('from-backend');
    });

    it('answers refusals with the JSON error body and content type of every other route, and no body to HEAD', async () => {
      const refused = await call('/api/v1/extensions/echo/x', undefined);
      expect(refused.status).to.equal(401);
      expect(refused.headers['content-type']).to.equal('application/json; charset=utf-8');
      expect(refused.json()).to.have.keys('error', 'message');
      const head = await call('/api/v1/extensions/nope/x', 'admin', {}, { method: 'HEAD' });
      expect(head.status).to.equal(404);
      expect(head.text).to.equal('');
      const unnamed = await call('/api/v1/extensions/', 'admin');
      expect(unnamed.status).to.equal(404);
      expect(unnamed.json()).to.deep.include({ error: 'extension_not_found' });
    });

    it('accepts the session cookie as the app does, quoted or not, and prefers the bearer token', async () => {
      const cookie = await call('/api/v1/extensions/echo/x', undefined, { cookie: `other=1; svc.token=${token['admin']}` });
      expect(cookie.status).to.equal(200);
      const quoted = await call('/api/v1/extensions/echo/x', undefined, { cookie: `svc.token="${token['admin']}"` });
      expect(quoted.status).to.equal(200);
      const bearerWins = await call('/api/v1/extensions/echo/x', 'bob', { cookie: `svc.token=${token['admin']}` });
      expect(bearerWins.status).to.equal(403);
    });

    it('counts proxied requests in svc_http_requests_total under the route pattern, never the raw path', async () => {
      const series = ['svc_http_requests_total{route="/api/v1/extensions/:name",method="GET",status="200"}', 'svc_http_requests_total{route="/api/v1/extensions/:name",method="GET",status="401"}'];
      const before = await metricValues(series);
      await call('/api/v1/extensions/echo/some/path', 'admin');
      await call('/api/v1/extensions/echo/other', undefined);
      const after = await metricValues(series);
      expect(series.map((_s, i) => (after[i] ?? 0) - (before[i] ?? 0))).to.deep.equal([1, 1]);
      expect(await (await fetch(`${server.url}/metrics`)).text()).not.to.include('some/path');
    });

    it('answers 400 to a target Node cannot parse, with or without an Upgrade, and keeps serving', async () => {
      for (const upgrade of ['', 'Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n']) {
        const answer = await rawExchange(`GET http://[/api/v1/extensions/echo/x HTTP/1.1\r\nHost: svc\r\n${upgrade}Connection: close\r\n\r\n`);
        expect(answer, upgrade === '' ? 'plain' : 'upgrade').to.match(/^HTTP\/1\.1 400 /);
        expect(answer).to.include('"error":"invalid_request"');
      }
      expect((await call('/api/v1/extensions/echo/x', 'admin')).status).to.equal(200);
    });

    /** Writes the request bytes as they are and reads the answer until the server closes. */
    function rawExchange(request: string): Promise<string> {
      return new Promise((resolve, reject) => {
        const socket = connect(server.port, '127.0.0.1', () => socket.write(request));
        let text = '';
        socket.setEncoding('utf8');
        socket.on('data', (c: string) => (text += c));
        socket.on('close', () => resolve(text));
        socket.on('error', reject);
      });
    }

    it('relays a body whose declared length arrives in many chunks, and one without a length', async () => {
      const sized = await call('/api/v1/extensions/chunky/sized', 'admin');
      expect(sized.text).to.equal('0123456789'.repeat(1000));
      const chunked = await call('/api/v1/extensions/chunky/chunked', 'admin');
      expect(chunked.text).to.equal('abc'.repeat(3));
    });
  });

  it('counts requests, latency and bytes per extension', async () => {
    const series = [
      'svc_extension_requests_total{extension="echo",status="200"}',
      'svc_extension_requests_total{extension="echo",status="403"}',
      'svc_extension_request_duration_seconds_count{extension="echo"}',
      'svc_extension_request_bytes_total{extension="echo"}',
      'svc_extension_response_bytes_total{extension="echo"}',
    ];
    const before = await metricValues(series);
    const posted = await call('/api/v1/extensions/echo/m', 'admin', {}, { method: 'POST', body: '12345' });
    await call('/api/v1/extensions/echo/m', 'bob');
    const after = await metricValues(series);
    expect(series.map((_s, i) => (after[i] ?? 0) - (before[i] ?? 0))).to.deep.equal([1, 1, 2, 5, Buffer.byteLength(posted.text)]);
  });

  async function metricValues(series: readonly string[]): Promise<number[]> {
    const lines = (await (await fetch(`${server.url}/metrics`)).text()).split('\n');
    return series.map((s) => Number(lines.find((l) => l.startsWith(`${s} `))?.slice(s.length + 1) ?? 0));
  }

  it('applies a configuration change during a stream of requests without failing one', async () => {
    const other = await echoBackend('echo-2');
    let stop = false;
    const statuses: number[] = [];
    const seen = new Set<string>();
    const load = Array.from({ length: 8 }, async () => {
      while (!stop) {
        const res = await call('/api/v1/extensions/echo/r', 'admin');
        statuses.push(res.status);
        if (res.status === 200) seen.add((res.json() as unknown as Echo).backend);
      }
    });
    await new Promise((r) => setTimeout(r, 200));
    await rewriteExtensionConfig(server, dir, extensions({ echoUrl: `${other.url}/base` }), ACCOUNTS);
    await new Promise((r) => setTimeout(r, 300));
    await rewriteExtensionConfig(server, dir, extensions(), ACCOUNTS);
    await new Promise((r) => setTimeout(r, 200));
    stop = true;
    await Promise.all(load);
    await other.close();
    expect(statuses.length).to.be.greaterThan(50);
    expect(statuses.filter((s) => s !== 200)).to.deep.equal([]);
    expect([...seen].sort()).to.deep.equal(['echo', 'echo-2']);
  });

  it('keeps the bytes intact (sha256 round trip through the echo length)', async () => {
    const body = Buffer.from(createHash('sha256').update('x').digest('hex'));
    const res = await call('/api/v1/extensions/echo/s', 'admin', {}, { method: 'POST', body });
    expect((res.json() as unknown as Echo).body).to.equal(body.toString());
  });
});
