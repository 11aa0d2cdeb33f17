/**
 * The leanest Node proxy measured here: node:http + undici dispatch() with a handler that ends
 * the response with the last chunk (one write to the client), and nothing else (no auth, no
 * rights, no header filtering, no metrics). svc's relay (src/extensions/forward.ts) uses the same
 * technique, so bench/proxy-cpu.sh reads svc's own cost against this.
 * Usage: node --import tsx bench/node-floor-dispatch.ts PORT BACKEND_URL
 */
import { createServer } from 'node:http';
import { Pool, type Dispatcher } from 'undici';

const [port, backend] = [Number(process.argv[2]), process.argv[3] ?? ''];
const pool = new Pool(backend, { connections: 128 });

createServer((req, res) => {
  let pending: Buffer | undefined;
  const handler: Dispatcher.DispatchHandler = {
    // undici 8 refuses a handler without it.
    onRequestStart() {},
    onResponseStart(controller, statusCode) {
      res.writeHead(statusCode, (controller.rawHeaders as Buffer[]).map((b) => b.toString('latin1')));
    },
    onResponseData(controller, chunk) {
      const previous = pending;
      pending = chunk;
      if (previous !== undefined && !res.write(previous)) {
        controller.pause();
        res.once('drain', () => controller.resume());
      }
    },
    onResponseEnd() {
      res.end(pending);
    },
    onResponseError() {
      res.statusCode = 502;
      res.end();
    },
  };
  pool.dispatch({ path: req.url ?? '/', method: 'GET', headers: ['x-forwarded-host', req.headers.host ?? ''] }, handler);
}).listen(port, '127.0.0.1');
