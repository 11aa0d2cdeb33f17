/** Clients that leave early, above all while authentication is still running, pin nothing. */
import { expect } from 'chai';
import { connect } from 'node:net';
import { request } from 'undici';
import { tempConfigDir } from '../helpers/manifests.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { login, startBackend, storeFiles, type Backend } from './helpers.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

describe('extension proxy (clients that leave)', function () {
  cleanUpTempDirs();
  this.timeout(30_000);
  let backend: Backend;
  let server: TestServer;
  let streams = 0;

  before(async () => {
    backend = await startBackend((req, res) => {
      if (req.url === '/quick') {
        res.end('quick');
        return;
      }
      // An endless event stream: only the proxy giving up ends it.
      streams++;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const tick = setInterval(() => res.write('data: tick\n\n'), 100);
      res.once('close', () => {
        clearInterval(tick);
        streams--;
      });
    });
    const dir = tempConfigDir(
      storeFiles({
        extensionConfig: { extensions: [{ name: 'sse', enabled: true, backend: { idleConnTimeout: '1s', services: [{ url: backend.url }] } }] },
        policy: '',
        accounts: [],
      }),
    );
    server = await startTestServer(dir);
  });

  after(async () => {
    await server.close(100);
    await backend.close();
  });

  it('leaves no backend stream open after many disconnects during authentication, and keeps serving', async () => {
    for (let i = 0; i < 30; i++) {
      // A token never seen before is verified asynchronously, so the client is gone before forward() starts.
      const fresh = await login(server, 'admin');
      const socket = connect(server.port, '127.0.0.1');
      socket.on('error', () => undefined);
      socket.on('connect', () => {
        socket.write(`GET /api/v1/extensions/sse/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${fresh}\r\n\r\n`);
        socket.destroy();
      });
    }
    await new Promise((r) => setTimeout(r, 1_500)); // past idleConnTimeout, which a ticking stream never reaches
    expect(streams, 'backend streams still open for departed clients').to.equal(0);
    const res = await request(`${server.url}/api/v1/extensions/sse/quick`, { headers: { authorization: `Bearer ${await login(server, 'admin')}` } });
    expect([res.statusCode, await res.body.text()]).to.deep.equal([200, 'quick']);
  });
});
