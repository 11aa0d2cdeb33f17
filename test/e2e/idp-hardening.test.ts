/**
 * The bundled identity provider's answers to odd requests, inside a real svc with an http `url`:
 * an oversized form posted to the callback with a request pipelined behind it (raw socket), a
 * Host header that is not `url`'s, and the device page's headers. The connector is a fake
 * PasswordConnector (a double of the Connector contract).
 */
import { request } from 'node:http';
import { connect } from 'node:net';
import { expect } from 'chai';
import { MAX_FORM_BYTES } from '../../src/idp/login/form-body.js';
import { SECRET_KEY } from '../helpers/accounts-fixture.js';
import { fakePasswordConnector } from '../helpers/fake-password-connector.js';
import { startPasswordIdpSvc } from '../helpers/idp-svc.js';
import type { TestServer } from '../helpers/server.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

/** Writes `request` on a new connection; everything the server sent until it closed (or `ms` passed). */
function exchange(port: number, request: Buffer, ms = 5_000): Promise<{ text: string; closed: boolean }> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ text: Buffer.concat(chunks).toString('latin1'), closed: false });
    }, ms);
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ text: Buffer.concat(chunks).toString('latin1'), closed: true });
    });
    socket.write(request);
  });
}

describe('e2e: the identity provider\'s answers to odd requests', function () {
  cleanUpTempDirs();
  this.timeout(30_000);
  let server: TestServer;
  let port: number;
  let url: string;

  before(async function () {
    ({ port, url, server } = await startPasswordIdpSvc(fakePasswordConnector({}), { secretKey: SECRET_KEY }));
  });

  after(() => server?.close());

  for (const framing of ['content-length', 'chunked'] as const) {
    it(`answers an oversized form (${framing}) to the callback with 413 and closes the connection, a pipelined request behind it unanswered`, async function () {
      const body = Buffer.alloc(MAX_FORM_BYTES + 1024, 'a');
      const head = framing === 'content-length'
        ? `POST /api/idp/callback HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${body.length}\r\n\r\n`
        : 'POST /api/idp/callback HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n\r\n';
      const payload = framing === 'content-length' ? body : Buffer.concat([Buffer.from(`${body.length.toString(16)}\r\n`), body, Buffer.from('\r\n0\r\n\r\n')]);
      const next = 'GET /api/idp/jwks HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';
      const { text, closed } = await exchange(port, Buffer.concat([Buffer.from(head), payload, Buffer.from(next)]));
      expect(text.split('\r\n')[0]).to.equal('HTTP/1.1 413 Payload Too Large');
      expect(text.toLowerCase()).to.include('connection: close');
      expect(text.match(/HTTP\/1\.1 \d{3}/g), 'responses').to.have.lengthOf(1);
      expect(closed, 'connection closed by the server').to.equal(true);
      expect(server.logs()).to.not.include('a login page failed');
    });
  }

  /** A GET with the given Host header (fetch will not send one of ours). */
  function get(path: string, host: string): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
    return new Promise((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path, headers: { host } }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      });
      req.on('error', reject);
      req.end();
    });
  }

  it('names its endpoints after `url` in discovery and redirects, whatever Host the client sends', async function () {
    const { body } = await get('/api/idp/.well-known/openid-configuration', 'evil.example');
    const discovery = JSON.parse(body) as Record<string, unknown>;
    expect(discovery['issuer']).to.equal(`${url}/api/idp`);
    for (const key of ['authorization_endpoint', 'token_endpoint', 'jwks_uri', 'userinfo_endpoint', 'device_authorization_endpoint', 'end_session_endpoint']) {
      expect(String(discovery[key]), key).to.match(new RegExp(`^${url}/api/idp/`));
    }
    expect(body).to.not.include('evil.example');
  });

  it('serves the device page with a code from the link as svc\'s own page: CSP, no inline script, no session stored', async function () {
    const { status, headers, body } = await get('/api/idp/device?user_code=BCDF-GHJK', `127.0.0.1:${port}`);
    expect(status).to.equal(200);
    expect(String(headers['content-security-policy'])).to.include("script-src 'self'").and.include("frame-ancestors 'none'");
    expect(body, 'no inline script').to.not.match(/<script(?![^>]*\ssrc=)[^>]*>/);
    expect(body).to.include('value="BCDF-GHJK"').and.include('<label for="user_code">');
    const cookies = ([] as string[]).concat(headers['set-cookie'] ?? []);
    expect(cookies.filter((c) => c.startsWith('_session')), 'no provider session').to.deep.equal([]);
  });

  it('refuses a device form posted without the cookie its page set (its CSRF secret)', async function () {
    const page = await fetch(`${url}/api/idp/device`);
    const html = await page.text();
    const xsrf = /name="xsrf" value="([^"]+)"/.exec(html)?.[1] ?? '';
    const cookie = (page.headers.getSetCookie().find((c) => c.startsWith('svc.device=')) ?? '').split(';')[0] ?? '';
    expect(xsrf).to.not.equal('');
    expect(cookie).to.match(/^svc\.device=./);
    const post = (headers: Record<string, string>) => fetch(`${url}/api/idp/device`, { method: 'POST', headers, body: new URLSearchParams({ xsrf, user_code: 'BCDF-GHJK' }), redirect: 'manual' });
    const forged = await post({});
    expect(forged.status).to.equal(400);
    expect(await forged.text()).to.not.include('Confirm the device');
    const own = await post({ cookie });
    // Its own browser gets past the CSRF check: the code is unknown, so the input page again.
    expect(await own.text()).to.include('That code is not right');
  });

  // Found by fuzzing the login pages (test/idp/login/interactions.fuzz.test.ts, seed 3807):
  // `POST /api/idp/interaction//connector/x` was Koa's plain-text "Not Found".
  it('answers a path under /api/idp that nothing serves with the JSON 404 of the rest of svc, naming it: the login app\'s and the provider\'s', async function () {
    for (const [method, path] of [['POST', '/api/idp/interaction//connector/x'], ['GET', '/api/idp/interaction//connector/x'], ['GET', '/api/idp/nothing'], ['POST', '/api/idp/nothing/at/all']] as const) {
      const res = await fetch(`${url}${path}`, { method, redirect: 'manual' });
      expect(res.status, `${method} ${path}`).to.equal(404);
      expect(res.headers.get('content-type'), `${method} ${path}`).to.match(/^application\/json/);
      expect(await res.json()).to.deep.equal({ error: 'not_found', message: `no route for ${method} ${path}` });
    }
    // What the provider serves is untouched.
    expect((await fetch(`${url}/api/idp/.well-known/openid-configuration`)).status).to.equal(200);
  });
});
