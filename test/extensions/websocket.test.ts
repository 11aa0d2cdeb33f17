import { expect } from 'chai';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { createServer as createNetServer, type AddressInfo, type Server as NetServer, type Socket } from 'node:net';
import { chromium, type Browser } from 'playwright-core';
import { request } from 'undici';
import { WebSocket, WebSocketServer } from 'ws';
import { application, tempConfigDir } from '../helpers/manifests.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { chromiumPath, CHROMIUM_ARGS } from '../helpers/browser.js';
import { closeServer, echoBackend, listen, login, rawExchange, storeFiles, type Backend, type Echo } from './helpers.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';
import { createOpenRelays } from '../../src/extensions/open-relays.js';
import { createExtensionMetrics } from '../../src/extensions/metrics.js';
import { relayWebSocket } from '../../src/extensions/websocket.js';
import { splitExtensionPath } from '../../src/extensions/target.js';
import { requestTarget } from '../../src/http/request-target.js';
import { decisionSettings, freshRegistry, getLineOnly, READER, silentLog } from './decision-fixture.js';

describe('extension proxy (WebSocket and server-sent events)', function () {
  cleanUpTempDirs();
  this.timeout(30_000);
  let backend: Server;
  let wss: WebSocketServer;
  let server: TestServer;
  let token: Record<string, string>;
  let backendUrl: string;
  let silent: NetServer;
  const silentSockets: Socket[] = [];
  let upgrades: IncomingMessage[] = [];
  let releaseSecondEvent: () => void = () => undefined;

  before(async () => {
    backend = createServer((req, res) => {
      if (req.url === '/events') {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        res.write('data: one\n\n');
        releaseSecondEvent = () => res.end('data: two\n\n');
        return;
      }
      res.writeHead(426, { 'content-type': 'text/plain' });
      res.end('upgrade required');
    });
    wss = new WebSocketServer({ noServer: true });
    backend.on('upgrade', (req: IncomingMessage, socket, head) => {
      upgrades.push(req);
      if (req.url?.split('?')[0] !== '/ws/echo') {
        socket.end('HTTP/1.1 404 Not Found\r\ncontent-length: 9\r\nconnection: close\r\n\r\nnot found');
        return;
      }
      wss.handleUpgrade(req, socket, head, (ws) => ws.on('message', (data, binary) => ws.send(binary ? data : `echo: ${String(data)}`)));
    });
    const { url } = await listen(backend);
    backendUrl = url;
    // Accept TCP and never say a word: as a TLS server it hangs in the handshake.
    silent = createNetServer((socket) => silentSockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const silentPort = (silent.address() as AddressInfo).port;
    const dir = tempConfigDir(
      storeFiles({
        extensionConfig: { extensions: [{ name: 'live', enabled: true, backend: { services: [{ url: `${url}/ws` }] } }, { name: 'sse', enabled: true, backend: { services: [{ url }] } },
          { name: 'silent', enabled: true, backend: { idleConnTimeout: '1s', services: [{ url: `http://127.0.0.1:${silentPort}` }] } },
          { name: 'tls-hangs', enabled: true, backend: { idleConnTimeout: '1s', services: [{ url: `https://127.0.0.1:${silentPort}` }] } },
          // A token every 100 s: the tests below never see one come back.
          { name: 'limited', enabled: true, backend: { rateLimit: { requestsPerSecond: 0.01, burst: 2 }, services: [{ url: `${url}/ws` }] } },
        ] },
        policy: 'p, alice, extensions, *, team-a/live, allow\np, dave, extensions, get, team-a/live, allow\np, erin, extensions, post, team-a/live, allow\n'
          + 'p, alice, extensions, *, */limited, allow\np, dave, extensions, get, */limited, allow',
        accounts: ['alice', 'dave', 'erin'],
        extra: { 'apps.yaml': application('argocd', 'app-a', 'team-a', { name: 'in-cluster' }) },
      }),
    );
    server = await startTestServer(dir);
    token = { admin: await login(server, 'admin'), alice: await login(server, 'alice'), dave: await login(server, 'dave'), erin: await login(server, 'erin') };
  });

  after(async () => {
    for (const socket of silentSockets) socket.destroy();
    silent.close();
    wss.close();
    await server.close();
    await closeServer(backend);
  });

  function open(path: string, headers: Record<string, string>, origin?: string): Promise<WebSocket> {
    const ws = new WebSocket(`${server.url.replace('http', 'ws')}${path}`, { headers, ...(origin !== undefined ? { origin } : {}) });
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(ws));
      ws.once('unexpected-response', (_req, res) => reject(new Error(`status ${res.statusCode}`)));
      ws.once('error', reject);
    });
  }

  it('echoes through the proxy after the checks, with the filtered headers', async () => {
    upgrades = [];
    const ws = await open('/api/v1/extensions/live/echo', { authorization: `Bearer ${token['alice']}`, 'svc-application-name': 'argocd/app-a', 'svc-username': 'admin', cookie: 'a=b' });
    const replies: string[] = [];
    const done = new Promise<void>((resolve) => ws.on('message', (data) => replies.push(String(data)) === 2 && resolve()));
    ws.send('hello');
    ws.send('again');
    await done;
    ws.close();
    expect(replies).to.deep.equal(['echo: hello', 'echo: again']);
    const seen = upgrades[0]?.headers ?? {};
    expect(seen['svc-username']).to.equal('alice');
    expect(seen['svc-project-name']).to.equal('team-a');
    expect(seen).to.not.have.any.keys('authorization', 'cookie');
    expect(seen['upgrade']).to.equal('websocket');
  });

  it('refuses the upgrade with the same errors as HTTP: 401, 403, 404', async () => {
    const statuses: string[] = [];
    for (const [path, headers] of [
      ['/api/v1/extensions/live/echo', {}],
      ['/api/v1/extensions/live/echo', { authorization: `Bearer ${token['alice']}` }],
      ['/api/v1/extensions/nope/echo', { authorization: `Bearer ${token['admin']}` }],
    ] as const) {
      statuses.push(await open(path, headers).then(() => 'open', (err: Error) => err.message));
    }
    expect(statuses).to.deep.equal(['status 401', 'status 403', 'status 404']);
  });

  it('asks the rights for a handshake as a get: a get line opens it, a post line does not', async () => {
    const app = { 'svc-application-name': 'argocd/app-a' };
    const ws = await open('/api/v1/extensions/live/echo', { authorization: `Bearer ${token['dave']}`, ...app });
    ws.close();
    const refused = await rawExchange(server.port, `GET /api/v1/extensions/live/echo HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token['erin']}\r\nSvc-Application-Name: argocd/app-a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`);
    expect(refused.data).to.match(/^HTTP\/1\.1 403 /);
    expect(refused.data).to.include("'erin' may not use extension 'live' with GET: no rights rule allows extensions, *, team-a/live nor extensions, get, team-a/live");
  });

  it('rate-limits the handshake like any request: 429 with Retry-After past the burst, another caller not affected, an anonymous one limited by address', async () => {
    const handshake = (auth: string) => rawExchange(server.port, `GET /api/v1/extensions/limited/echo HTTP/1.1\r\nHost: x\r\n${auth}Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`);
    const alice = { authorization: `Bearer ${token['alice']}` };
    const opened = await Promise.all([open('/api/v1/extensions/limited/echo', alice), open('/api/v1/extensions/limited/echo', alice)]);
    for (const ws of opened) ws.close();
    const refused = await handshake(`Authorization: Bearer ${token['alice']}\r\n`);
    expect(refused.data).to.match(/^HTTP\/1\.1 429 /);
    expect(refused.data).to.match(/\r\nretry-after: 100\r\n/i);
    const body = JSON.parse(refused.data.slice(refused.data.indexOf('\r\n\r\n') + 4)) as unknown;
    expect(body).to.deep.equal({ error: 'rate_limited', message: "extension 'limited' allows 0.01 requests per second per caller (burst 2); try again in 100s" });
    // Another caller has a bucket of its own.
    const other = await open('/api/v1/extensions/limited/echo', { authorization: `Bearer ${token['dave']}` });
    other.close();
    // Without a valid caller, the address's bucket: the 401s spend it, then the limit answers first.
    const anonymous = [];
    for (let i = 0; i < 3; i++) anonymous.push(/^HTTP\/1\.1 (\d+)/.exec((await handshake('')).data)?.[1]);
    expect(anonymous).to.deep.equal(['401', '401', '429']);
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    expect(metrics).to.match(/^svc_extension_rate_limited_total\{extension="limited"\} 2$/m);
    expect(metrics).to.match(/^svc_extension_requests_total\{extension="limited",status="429"\} 2$/m);
  });

  it('408 when a connected backend says nothing for idleConnTimeout; 504 when it never completes TLS', async function () {
    this.timeout(20_000);
    const handshake = async (extension: string) => {
      const start = Date.now();
      const res = await rawExchange(server.port, `GET /api/v1/extensions/${extension}/ws HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token['admin']}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`, 15_000);
      return { status: /^HTTP\/1\.1 (\d+)/.exec(res.data)?.[1], ms: Date.now() - start };
    };
    const idle = await handshake('silent');
    expect(idle.status).to.equal('408');
    expect(idle.ms).to.be.within(900, 2_500);
    // The connect limit (10 s, as for HTTP), not idleConnTimeout, bounds TCP + TLS.
    const tls = await handshake('tls-hangs');
    expect(tls.status).to.equal('504');
    expect(tls.ms).to.be.within(9_500, 12_000);
  });

  it("relays the backend's answer when it declines the upgrade", async () => {
    const result = await open('/api/v1/extensions/live/elsewhere', { authorization: `Bearer ${token['admin']}` }).then(() => 'open', (err: Error) => err.message);
    expect(result).to.equal('status 404');
  });

  it('answers every upgrade outside the extension prefix, never leaving the socket open', async () => {
    const auth = `Authorization: Bearer ${token['admin']}\r\n`;
    const other = await rawExchange(server.port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n');
    expect(other.closed, 'websocket upgrade on /healthz').to.equal(true);
    expect(other.data).to.match(/^HTTP\/1\.1 200 OK\r\n[^]*connection: close\r\n\r\nok$/i);
    // What curl --http2 sends on http://: the upgrade is ignored and the request served.
    const h2c = await rawExchange(server.port, `GET /api/v1/session/userinfo HTTP/1.1\r\nHost: x\r\n${auth}Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n`);
    expect(h2c.closed, 'h2c').to.equal(true);
    expect(h2c.data).to.match(/^HTTP\/1\.1 200 OK\r\n[^]*"loggedIn":true/);
    const withBody = await rawExchange(server.port, 'POST /api/v1/session HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: h2c\r\nContent-Length: 2\r\n\r\n{}');
    expect(withBody.closed, 'h2c with a body').to.equal(true);
    expect(withBody.data).to.match(/^HTTP\/1\.1 400 Bad Request\r\n[^]*"error":"invalid_request"/);
  });

  it('reads the extension from the parsed path, as HTTP does (absolute-form target)', async () => {
    upgrades = [];
    const res = await rawExchange(server.port, `GET http://evil.example/api/v1/extensions/live/echo HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token['admin']}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`, 500);
    expect(res.data).to.match(/^HTTP\/1\.1 101 /);
    expect(upgrades[0]?.url).to.equal('/ws/echo');
  });

  it('sends Connection: upgrade itself, never the Connection value the client chose', async () => {
    upgrades = [];
    await rawExchange(server.port, `GET /api/v1/extensions/live/echo HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token['admin']}\r\nConnection: Upgrade, Svc-Username, X-Forwarded-For\r\nUpgrade: websocket\r\nSvc_Username: root\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`, 500);
    const seen = upgrades[0]?.headers ?? {};
    expect(seen['connection']).to.equal('upgrade');
    expect(seen['upgrade']).to.equal('websocket');
    expect(seen['svc-username']).to.equal('admin');
    expect(seen).to.not.have.any.keys('svc_username');
  });

  it('refuses a cookie-authenticated upgrade from another origin (cross-site WebSocket hijacking)', async () => {
    const cookie = { cookie: `svc.token=${token['admin']}` };
    const evil = await open('/api/v1/extensions/live/echo', cookie, 'https://evil.example.com').then(() => 'open', (err: Error) => err.message);
    expect(evil).to.equal('status 403');
    const none = await open('/api/v1/extensions/live/echo', cookie).then(() => 'open', (err: Error) => err.message);
    expect(none, 'no Origin at all').to.equal('status 403');
    const res = await rawExchange(server.port, `GET /api/v1/extensions/live/echo HTTP/1.1\r\nHost: x\r\nCookie: svc.token=${token['admin']}\r\nOrigin: https://evil.example.com\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`);
    expect(JSON.parse(res.data.slice(res.data.indexOf('\r\n\r\n') + 4))).to.deep.equal({
      error: 'permission_denied',
      message: "a WebSocket signed in with the svc.token cookie must come from svc's own origin, not 'https://evil.example.com'",
    });
  });

  it('accepts a cookie-authenticated upgrade from its own origin, and a bearer token from any', async () => {
    const cookie = `svc.token=${token['admin']}`;
    const cases: [what: string, headers: Record<string, string>, origin: string][] = [
      ['the cookie from the origin it was reached at', { cookie }, server.url],
      ['the cookie from the configured url', { cookie, host: 'svc.example.com' }, 'http://127.0.0.1:8080'],
      ['a bearer token from another origin', { authorization: `Bearer ${token['admin']}` }, 'https://evil.example.com'],
    ];
    for (const [what, headers, origin] of cases) {
      upgrades = [];
      const ws = await open('/api/v1/extensions/live/echo', headers, origin).catch((err: unknown) => {
        throw new Error(`${what}: refused (${String(err)})`);
      });
      const reply = new Promise<string>((resolve) => ws.once('message', (data) => resolve(String(data))));
      ws.send(what);
      expect(await reply, what).to.equal(`echo: ${what}`);
      ws.close();
      // Relayed to the backend as the token's account: the upgrade was authenticated, not let through.
      expect(upgrades.map((u) => u.headers['svc-username']), what).to.deep.equal(['admin']);
    }
  });

  it('lets a handshake name the application in the query, which the backend does not receive', async () => {
    upgrades = [];
    const ws = await open('/api/v1/extensions/live/echo?x=1&svc-application-name=argocd%2Fapp-a', { authorization: `Bearer ${token['alice']}` });
    ws.close();
    expect(upgrades[0]?.url).to.equal('/ws/echo?x=1');
    expect(upgrades[0]?.headers['svc-application-name']).to.equal('argocd/app-a');
    expect(upgrades[0]?.headers['svc-project-name']).to.equal('team-a');
  });

  it('refuses a handshake whose header and query name different applications (400), after the 404 and 401 checks', async () => {
    const conflicting = (extension: string, auth: string) =>
      rawExchange(
        server.port,
        `GET /api/v1/extensions/${extension}/echo?svc-application-name=argocd/app-b HTTP/1.1\r\nHost: x\r\n${auth}Svc-Application-Name: argocd/app-a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`,
      );
    const refused = await conflicting('live', `Authorization: Bearer ${token['alice']}\r\n`);
    expect(refused.data).to.match(/^HTTP\/1\.1 400 /);
    expect(refused.data).to.contain('name different applications');
    expect((await conflicting('live', '')).data).to.match(/^HTTP\/1\.1 401 /);
    expect((await conflicting('nope', `Authorization: Bearer ${token['alice']}\r\n`)).data).to.match(/^HTTP\/1\.1 404 /);
  });

  it("carries the client's request id on the 101 and on a refusal", async () => {
    const handshake = (auth: string) =>
      rawExchange(server.port, `GET /api/v1/extensions/live/echo HTTP/1.1\r\nHost: x\r\n${auth}X-Request-Id: trace-ws-1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n`, 500);
    const upgraded = await handshake(`Authorization: Bearer ${token['admin']}\r\n`);
    expect(upgraded.data).to.match(/^HTTP\/1\.1 101 [^]*\r\nX-Request-Id: trace-ws-1\r\n/i);
    const refused = await handshake('');
    expect(refused.data).to.match(/^HTTP\/1\.1 401 [^]*\r\nx-request-id: trace-ws-1\r\n/i);
  });

  describe('from a page in Chromium (signed in with the cookie, no way to set a header)', function () {
    let browser: Browser;

    before(async () => {
      browser = await chromium.launch({ executablePath: chromiumPath(), args: CHROMIUM_ARGS });
    });

    after(async () => {
      await browser.close();
    });

    /** Opens a WebSocket from the page at `pageUrl`, sends 'hi'; the first message, or how it closed. */
    async function echoFromPage(pageUrl: string, path: string): Promise<string> {
      const context = await browser.newContext();
      try {
        // As svc sets it (HttpOnly, SameSite=Lax); cookies ignore ports, so pages on other ports of the host get it too.
        await context.addCookies([{ name: 'svc.token', value: token['alice'] as string, url: server.url, httpOnly: true, sameSite: 'Lax' }]);
        const page = await context.newPage();
        await page.goto(pageUrl);
        // A string, not a function: this file's own WebSocket (ws) would be compiled into it.
        const url = `${server.url.replace('http', 'ws')}${path}`;
        return await page.evaluate<string>(`new Promise((resolve) => {
          const ws = new WebSocket(${JSON.stringify(url)});
          ws.onopen = () => ws.send('hi');
          ws.onmessage = (event) => resolve(String(event.data));
          ws.onclose = (event) => resolve('closed ' + event.code);
        })`);
      } finally {
        await context.close();
      }
    }

    it('reaches a per-project extension by naming the application in the query', async () => {
      upgrades = [];
      expect(await echoFromPage(`${server.url}/healthz`, '/api/v1/extensions/live/echo?svc-application-name=argocd%2Fapp-a')).to.equal('echo: hi');
      expect(upgrades[0]?.url).to.equal('/ws/echo');
      expect(upgrades[0]?.headers).to.not.have.any.keys('cookie');
      expect(upgrades[0]?.headers['svc-username']).to.equal('alice');
    });

    it('is refused without the application (the rule is per project), and from a page of another origin', async () => {
      upgrades = [];
      // The page cannot read the status; svc's metrics tell why each handshake was refused.
      const refusals = async () => Number(/^svc_extension_requests_total\{extension="live",status="403"\} (\d+)$/m.exec(await (await fetch(`${server.url}/metrics`)).text())?.[1] ?? 0);
      const before = await refusals();
      expect(await echoFromPage(`${server.url}/healthz`, '/api/v1/extensions/live/echo')).to.equal('closed 1006');
      // Same site, other origin (another port): the browser sends the cookie, svc refuses the Origin.
      expect(await echoFromPage(`${backendUrl}/`, '/api/v1/extensions/live/echo?svc-application-name=argocd%2Fapp-a')).to.equal('closed 1006');
      expect(await refusals()).to.equal(before + 2);
      expect(upgrades).to.have.length(0);
    });
  });

  it('streams server-sent events as they come, not at the end', async () => {
    const res = await request(`${server.url}/api/v1/extensions/sse/events`, { headers: { authorization: `Bearer ${token['admin']}`, accept: 'text/event-stream' } });
    expect(res.statusCode).to.equal(200);
    expect(res.headers['content-type']).to.equal('text/event-stream');
    const chunks: string[] = [];
    for await (const chunk of res.body) {
      chunks.push(String(chunk));
      if (chunks.length === 1) {
        expect(chunks[0]).to.equal('data: one\n\n'); // arrived while the backend still holds the stream open
        releaseSecondEvent();
      }
    }
    expect(chunks.join('')).to.equal('data: one\n\ndata: two\n\n');
  });
});

/**
 * The relay sends the handshake it decided on. While the rights decide, the test changes the
 * client's request to a DELETE with another header; the backend (plain node:http, which serves
 * such a request as a plain one) must still get the GET that was asked as a `get`. A relay that
 * read req.method or req.rawHeaders again after the decision sends the DELETE.
 */
describe('extensions/websocket: the handshake decided on is the handshake sent', function () {
  this.timeout(10_000);
  let backend: Backend;
  let front: Server;
  let port: number;
  let current: IncomingMessage | undefined;
  let rights: ReturnType<typeof getLineOnly>;
  const sockets = new Set<Socket>();
  const HANDSHAKE = 'Host: svc\r\nAuthorization: Bearer reader-token\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n';

  before(async () => {
    backend = await echoBackend('backend');
    rights = getLineOnly(
      () => current as IncomingMessage,
      (req) => {
        req.method = 'DELETE';
        req.rawHeaders.push('X-Changed-After', 'yes');
        req.headers['x-changed-after'] = 'yes';
      },
    );
    const settings = decisionSettings(backend.url);
    const deps = {
      settings: { current: () => settings, onChange: () => () => undefined },
      rights: { allows: rights.allows, onUpdate: () => () => undefined },
      log: silentLog,
      httpMetrics: { registry: freshRegistry(), record: () => undefined },
      readCaller: () => ({ principal: READER, token: 'reader-token', via: 'bearer' as const, authError: undefined }),
      authenticator: { authenticate: () => Promise.resolve(READER), onRevoked: () => () => undefined, onCutoffMoved: () => () => undefined },
      rateLimiter: { take: () => undefined, localBuckets: () => 0, leases: () => 0 },
      sourceOf: () => '127.0.0.1',
      metrics: createExtensionMetrics(freshRegistry()),
      relays: createOpenRelays({ authenticate: () => Promise.resolve(READER), log: silentLog }),
      track: (socket: Socket) => {
        sockets.add(socket);
        socket.once('close', () => sockets.delete(socket));
      },
    };
    front = createServer((_req, res) => res.writeHead(404).end());
    front.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
      current = req;
      const target = requestTarget(req);
      const extension = target === undefined ? undefined : splitExtensionPath(target.path);
      if (target === undefined || extension === undefined) return void socket.destroy();
      relayWebSocket(deps, req, { name: extension.name, rest: extension.rest, path: target.path, query: target.query }, head, socket);
    });
    port = (await listen(front)).port;
  });

  after(async () => {
    for (const socket of sockets) socket.destroy();
    await closeServer(front);
    await backend.close();
  });

  it('forwards the GET the rights allowed, with its headers, though the client request now says DELETE', async () => {
    rights.asked.length = 0;
    const reply = await rawExchange(port, `GET /api/v1/extensions/ext3/items/42 HTTP/1.1\r\n${HANDSHAKE}`);
    expect(reply.data).to.match(/^HTTP\/1\.1 200 /);
    const echo = JSON.parse(reply.data.slice(reply.data.indexOf('\r\n\r\n') + 4)) as Echo;
    expect(rights.asked).to.deep.equal(['get */ext3']);
    expect(echo.method).to.equal('GET');
    expect(echo.url).to.equal('/items/42');
    expect(echo.headers['svc-username']).to.equal('reader');
    expect(echo.headers).to.not.have.any.keys('x-changed-after');
  });

  it('refuses a handshake that is not a GET with 400 before the rights are asked', async () => {
    rights.asked.length = 0;
    const reply = await rawExchange(port, `DELETE /api/v1/extensions/ext3/items/42 HTTP/1.1\r\n${HANDSHAKE}`);
    expect(reply.data).to.match(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(reply.data.slice(reply.data.indexOf('\r\n\r\n') + 4))).to.deep.equal({
      error: 'invalid_request',
      message: 'a WebSocket handshake must be a GET (RFC 6455), not DELETE: send DELETE requests without Upgrade: websocket',
    });
    expect(rights.asked).to.deep.equal([]);
  });
});
