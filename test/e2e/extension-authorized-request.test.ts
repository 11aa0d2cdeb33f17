/**
 * "A right is asked for the request that is sent", end to end: svc-server as its own process,
 * in front of a plain node:http backend that answers any method (it has no 'upgrade' listener,
 * so, like Python's http.server or Go's net/http, it serves a DELETE that carries
 * `Upgrade: websocket` as a plain DELETE) and records every request it gets.
 *
 * - A caller with only a `get` line sends `DELETE …` with `Connection: Upgrade` and
 *   `Upgrade: websocket`: refused with 400 (RFC 6455 requires GET) and the backend sees nothing.
 *   Before the fix the rights were asked as a `get`, the DELETE was forwarded, and its 200 relayed.
 * - Client-sent identity headers in other spellings (`Svc.Identity.Assertion`,
 *   `svc_identity_assertion`, `X.Forwarded.For`, `Remote.User`…), sent on a raw socket since
 *   HTTP clients may refuse such names, never reach the backend, over HTTP or a handshake.
 * - A `post` line's POST reaches the backend without `X-HTTP-Method-Override: DELETE` and its
 *   kin, which Symfony, Laravel, Rails and Express's method-override would run instead.
 */
import { createServer, type Server } from 'node:http';
import { expect } from 'chai';
import { login } from '../helpers/accounts-fixture.js';
import { tempConfigDir } from '../helpers/manifests.js';
import { cleanRedisEnv, startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';
import { closeServer, listen, PASSWORD, rawExchange, storeFiles } from '../extensions/helpers.js';

/** What the backend received, one entry per request. */
interface Received {
  readonly method: string;
  readonly url: string;
  readonly rawHeaders: readonly string[];
}

const HANDSHAKE = 'Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n';

describe('e2e: the proxy forwards exactly the request whose rights it asked', function () {
  cleanUpTempDirs();
  this.timeout(60_000);
  let backend: Server;
  let received: Received[] = [];
  let svc: ServerProcess;
  let reader: string;
  let poster: string;

  before(async () => {
    backend = createServer((req, res) => {
      received.push({ method: req.method ?? '', url: req.url ?? '', rawHeaders: req.rawHeaders });
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ ran: `${req.method ?? ''} ${req.url ?? ''}` }));
      });
    });
    const { url } = await listen(backend);
    const dir = tempConfigDir(storeFiles({
      extensionConfig: { extensions: [{ name: 'ext3', enabled: true, backend: { services: [{ url }] } }] },
      policy: 'p, reader, extensions, get, */ext3, allow\np, poster, extensions, post, */ext3, allow',
      accounts: ['reader', 'poster'],
    }));
    svc = await startServerProcess(dir, 1, cleanRedisEnv({}));
    reader = await login(svc.url, 'reader', PASSWORD);
    poster = await login(svc.url, 'poster', PASSWORD);
  });

  after(async () => {
    await svc.stop();
    await closeServer(backend);
  });

  beforeEach(() => {
    received = [];
  });

  const port = (): number => Number(new URL(svc.url).port);
  const send = (text: string) => rawExchange(port(), text);
  const bodyOf = (data: string): unknown => JSON.parse(data.slice(data.indexOf('\r\n\r\n') + 4));

  it('refuses a handshake that is not a GET with 400, before the rights, and the backend never sees it', async () => {
    for (const method of ['DELETE', 'POST', 'PUT', 'HEAD']) {
      const reply = await send(`${method} /api/v1/extensions/ext3/items/42 HTTP/1.1\r\nHost: svc\r\nAuthorization: Bearer ${reader}\r\n${HANDSHAKE}\r\n`);
      expect(reply.data, method).to.match(/^HTTP\/1\.1 400 /);
      if (method !== 'HEAD') {
        expect(bodyOf(reply.data), method).to.deep.equal({
          error: 'invalid_request',
          message: `a WebSocket handshake must be a GET (RFC 6455), not ${method}: send ${method} requests without Upgrade: websocket`,
        });
      }
    }
    expect(received).to.deep.equal([]);
    // The same DELETE without the Upgrade header is asked as a delete, which reader lacks.
    const plain = await send(`DELETE /api/v1/extensions/ext3/items/42 HTTP/1.1\r\nHost: svc\r\nAuthorization: Bearer ${reader}\r\nConnection: close\r\n\r\n`);
    expect(plain.data).to.match(/^HTTP\/1\.1 403 /);
    expect(received).to.deep.equal([]);
  });

  it('forwards a GET handshake by the get line as the GET it was asked as', async () => {
    const reply = await send(`GET /api/v1/extensions/ext3/items/42 HTTP/1.1\r\nHost: svc\r\nAuthorization: Bearer ${reader}\r\n${HANDSHAKE}\r\n`);
    // The backend declines the upgrade (it answers 200): relayed as is.
    expect(reply.data).to.match(/^HTTP\/1\.1 200 /);
    expect(received.map((r) => `${r.method} ${r.url}`)).to.deep.equal(['GET /items/42']);
  });

  it('sends a post line\'s POST without the method overrides a backend framework would run instead', async () => {
    const overrides = ['X-HTTP-Method-Override: DELETE', 'X-HTTP-Method: DELETE', 'X-Method-Override: DELETE', 'x_http_method_override: PUT', 'X.HTTP.Method: PATCH']
      .map((line) => `${line}\r\n`).join('');
    const reply = await send(`POST /api/v1/extensions/ext3/items/42 HTTP/1.1\r\nHost: svc\r\nAuthorization: Bearer ${poster}\r\n${overrides}Content-Length: 0\r\nConnection: close\r\n\r\n`);
    expect(reply.data).to.match(/^HTTP\/1\.1 200 /);
    expect(received.map((r) => `${r.method} ${r.url}`)).to.deep.equal(['POST /items/42']);
    const names = (received[0]?.rawHeaders ?? []).filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase().replace(/[._]/g, '-'));
    expect(names.filter((n) => n.includes('method'))).to.deep.equal([]);
    // The DELETE itself is asked as a delete, which poster lacks.
    expect((await send(`DELETE /api/v1/extensions/ext3/items/42 HTTP/1.1\r\nHost: svc\r\nAuthorization: Bearer ${poster}\r\nConnection: close\r\n\r\n`)).data).to.match(/^HTTP\/1\.1 403 /);
  });

  it('drops identity headers spelled with dots, underscores and any case, over HTTP and on a handshake', async () => {
    const forged = [
      'Svc.Identity.Assertion: forged-1', 'svc_identity_assertion: forged-2', 'SVC.USERNAME: admin', 'Svc_User.Groups: admins',
      'X.Forwarded.For: 203.0.113.9', 'Remote.User: admin', 'X.WEBAUTH_USER: admin', 'x.auth.request.user: admin', 'X_Remote.Group: system:masters',
    ].map((line) => `${line}\r\n`).join('');
    await send(`GET /api/v1/extensions/ext3/plain HTTP/1.1\r\nHost: svc\r\nAuthorization: Bearer ${reader}\r\n${forged}Connection: close\r\n\r\n`);
    await send(`GET /api/v1/extensions/ext3/socket HTTP/1.1\r\nHost: svc\r\nAuthorization: Bearer ${reader}\r\n${forged}${HANDSHAKE}\r\n`);
    expect(received.map((r) => r.url)).to.deep.equal(['/plain', '/socket']);
    for (const { url, rawHeaders } of received) {
      const values = rawHeaders.filter((_, i) => i % 2 === 1);
      for (const value of ['forged-1', 'forged-2', 'admin', 'admins', '203.0.113.9', 'system:masters']) expect(values, `${url}: ${value}`).to.not.include(value);
      const names = rawHeaders.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase());
      expect(names, url).to.not.satisfy((all: string[]) => all.some((n) => /[._]/.test(n)));
      expect(rawHeaders[rawHeaders.findIndex((n) => n.toLowerCase() === 'svc-username') + 1], url).to.equal('reader');
    }
  });
});
