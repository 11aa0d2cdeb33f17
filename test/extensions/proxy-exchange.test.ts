/** The extension proxy (HTTP): request ids, error bodies, cookies, metrics, configuration changes and byte integrity. */
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { connect } from 'node:net';
import { echoBackend, rewriteExtensionConfig, type Echo } from './helpers.js';
import { ACCOUNTS, call, dir, extensions, metricValues, server, token, useProxyFixture } from './proxy-fixture.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

describe('extension proxy: the request around the exchange', function () {
  cleanUpTempDirs();
  this.timeout(30_000);
  useProxyFixture();

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
