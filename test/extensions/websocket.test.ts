import { expect } from 'chai';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { request } from 'undici';
import { WebSocket, WebSocketServer } from 'ws';
import { application, tempConfigDir } from '../helpers/manifests.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { closeServer, listen, login, storeFiles } from './helpers.js';

describe('extension proxy (WebSocket and server-sent events)', function () {
  this.timeout(30_000);
  let backend: Server;
  let wss: WebSocketServer;
  let server: TestServer;
  let token: Record<string, string>;
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
      if (req.url !== '/ws/echo') {
        socket.end('HTTP/1.1 404 Not Found\r\ncontent-length: 9\r\nconnection: close\r\n\r\nnot found');
        return;
      }
      wss.handleUpgrade(req, socket, head, (ws) => ws.on('message', (data, binary) => ws.send(binary ? data : `echo: ${String(data)}`)));
    });
    const { url } = await listen(backend);
    const dir = tempConfigDir(
      storeFiles({
        extensionConfig: { extensions: [{ name: 'live', enabled: true, backend: { services: [{ url: `${url}/ws` }] } }, { name: 'sse', enabled: true, backend: { services: [{ url }] } }] },
        policy: 'p, alice, extensions, *, team-a/live, allow',
        accounts: ['alice'],
        extra: { 'apps.yaml': application('argocd', 'app-a', 'team-a', { name: 'in-cluster' }) },
      }),
    );
    server = await startTestServer(dir);
    token = { admin: await login(server, 'admin'), alice: await login(server, 'alice') };
  });

  after(async () => {
    wss.close();
    await server.close();
    await closeServer(backend);
  });

  function open(path: string, headers: Record<string, string>): Promise<WebSocket> {
    const ws = new WebSocket(`${server.url.replace('http', 'ws')}${path}`, { headers });
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

  it("relays the backend's answer when it declines the upgrade", async () => {
    const result = await open('/api/v1/extensions/live/elsewhere', { authorization: `Bearer ${token['admin']}` }).then(() => 'open', (err: Error) => err.message);
    expect(result).to.equal('status 404');
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
