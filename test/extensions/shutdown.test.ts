/** close(graceMs) ends within about graceMs even with live WebSocket relays and stalled handshakes. */
import { expect } from 'chai';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import { WebSocket, WebSocketServer } from 'ws';
import { tempConfigDir } from '../helpers/manifests.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { closeServer, listen, login, storeFiles } from './helpers.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

describe('extension proxy (shutdown)', function () {
  cleanUpTempDirs();
  this.timeout(30_000);
  let backend: Server;
  let wss: WebSocketServer;
  let server: TestServer;
  const backendSockets = new Set<Socket>();

  before(async () => {
    backend = createServer();
    backend.on('connection', (s: Socket) => {
      backendSockets.add(s);
      s.once('close', () => backendSockets.delete(s));
    });
    wss = new WebSocketServer({ noServer: true });
    backend.on('upgrade', (req: IncomingMessage, socket, head) => {
      if (req.url === '/stall') {
        // Never answers the handshake; closes when svc does.
        socket.once('end', () => socket.destroy()).resume();
        return;
      }
      wss.handleUpgrade(req, socket, head, (ws) => ws.on('message', (data) => ws.send(data)));
    });
    const { url } = await listen(backend);
    const dir = tempConfigDir(
      storeFiles({ extensionConfig: { extensions: [{ name: 'live', enabled: true, backend: { services: [{ url }] } }] }, policy: '', accounts: [] }),
    );
    server = await startTestServer(dir);
  });

  after(async () => {
    wss.close();
    await closeServer(backend);
  });

  it('cuts open relays and pending upgrades at the grace deadline', async () => {
    const token = await login(server, 'admin');
    const ws = new WebSocket(`${server.url.replace('http', 'ws')}/api/v1/extensions/live/echo`, { headers: { authorization: `Bearer ${token}` } });
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const wsClosed = new Promise((resolve) => ws.once('close', resolve));
    const stalled = connect(server.port, '127.0.0.1');
    stalled.on('error', () => undefined);
    stalled.write(`GET /api/v1/extensions/live/stall HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n`);
    const stalledClosed = new Promise((resolve) => stalled.once('close', resolve));
    await new Promise((r) => setTimeout(r, 200));
    expect(backendSockets.size).to.equal(2);

    const start = Date.now();
    const closed = await Promise.race([server.close(300).then(() => 'closed'), new Promise((r) => setTimeout(() => r('still open after 5s'), 5_000))]);
    expect(closed).to.equal('closed');
    expect(Date.now() - start).to.be.within(250, 1_500);
    await Promise.all([wsClosed, stalledClosed]);
    await new Promise((r) => setTimeout(r, 100));
    expect(backendSockets.size, 'backend sockets of the relays').to.equal(0);
  });
});
