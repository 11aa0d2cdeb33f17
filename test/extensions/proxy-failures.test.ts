/** The extension proxy (HTTP): backends that refuse, stall or reset, and clients that pipeline, stall, leave or forge. */
import { expect } from 'chai';
import { connect, type Socket } from 'node:net';
import { request } from 'undici';
import { waitFor } from '../helpers/accounts-fixture.js';
import { login, rawExchange } from './helpers.js';
import { call, floodClosed, idleWaiting, metricValues, refusedPort, server, token, useProxyFixture } from './proxy-fixture.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

describe('extension proxy: backends that fail and clients that misbehave', function () {
  cleanUpTempDirs();
  this.timeout(30_000);
  useProxyFixture();

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

    it('answers 20 pipelined requests on one connection, in order, without a listener warning', async () => {
      // Each response queued behind another watches the connection for the client leaving: one
      // 'close' listener per queued request went past Node's limit of ten and printed a warning.
      const warnings: Error[] = [];
      const onWarning = (warning: Error) => warnings.push(warning);
      process.on('warning', onWarning);
      try {
        const get = (i: number, close: boolean) => `GET /api/v1/extensions/echo/r${i} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token['admin']}\r\n${close ? 'Connection: close\r\n' : ''}\r\n`;
        const res = await rawExchange(server.port, Array.from({ length: 20 }, (_, i) => get(i, i === 19)).join(''), 10_000);
        expect(res.closed).to.equal(true);
        const urls = [...res.data.matchAll(/"url":"([^"]*)"/g)].map((m) => m[1]);
        expect(urls).to.deep.equal(Array.from({ length: 20 }, (_, i) => `/base/r${i}`));
        // A warning is emitted on the next tick after the listener was added.
        await new Promise((r) => setImmediate(r));
        expect(warnings.map((w) => `${w.name}: ${w.message}`)).to.deep.equal([]);
      } finally {
        process.off('warning', onWarning);
      }
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
});
