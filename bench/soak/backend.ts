/**
 * The soak's extension backend: a real HTTP server behind svc's proxy with the routes a mixed
 * load needs (plain answers, a stream, an upload, a WebSocket echo), and a switch that makes it
 * reset connections in the middle of a stream, for the "backend resets" fault.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';

export interface SoakBackend {
  readonly url: string;
  /** While true, /stream answers start and are then cut (the socket destroyed) mid-body. */
  resetting: boolean;
  close(): Promise<void>;
}

const STREAM_CHUNKS = 20;
const STREAM_CHUNK = Buffer.alloc(4096, 'x');

function route(backend: SoakBackend, req: IncomingMessage, res: ServerResponse): void {
  const path = (req.url ?? '/').split('?')[0] ?? '/';
  if (path.endsWith('/upload')) {
    let bytes = 0;
    req.on('data', (chunk: Buffer) => (bytes += chunk.length));
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ bytes })));
    return;
  }
  if (path.endsWith('/stream')) {
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    let sent = 0;
    const timer = setInterval(() => {
      if (backend.resetting && sent === STREAM_CHUNKS / 2) {
        clearInterval(timer);
        req.socket.destroy();
        return;
      }
      res.write(STREAM_CHUNK);
      if (++sent === STREAM_CHUNKS) {
        clearInterval(timer);
        res.end();
      }
    }, 10);
    res.on('close', () => clearInterval(timer));
    return;
  }
  req.resume();
  const user = req.headers['svc-username'];
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ path, user }));
}

export async function startSoakBackend(): Promise<SoakBackend> {
  const server = createServer((req, res) => route(backend, req, res));
  const wss = new WebSocketServer({ noServer: true });
  server.on('upgrade', (req, socket, head) => wss.handleUpgrade(req, socket, head, (ws) => ws.on('message', (data) => ws.send(String(data)))));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const backend: SoakBackend = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    resetting: false,
    close: () =>
      new Promise((resolve) => {
        for (const client of wss.clients) client.terminate();
        wss.close();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return backend;
}
