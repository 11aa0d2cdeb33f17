/**
 * The floor a Node gateway starts from on this machine: node:http + undici stream(), the same
 * workers as svc, and nothing else (no Koa, no auth, no rights, no header filtering, no metrics).
 * bench/proxy.sh runs it beside svc so svc's cost is read against what Node itself costs.
 * Usage: node --import tsx bench/node-floor-proxy.ts PORT BACKEND_URL WORKERS
 */
import cluster from 'node:cluster';
import { createServer } from 'node:http';
import { Pool } from 'undici';

const [port, backend, workers] = [Number(process.argv[2]), process.argv[3] ?? '', Number(process.argv[4] ?? 1)];

if (cluster.isPrimary && workers > 1) {
  for (let i = 0; i < workers; i++) cluster.fork();
} else {
  const pool = new Pool(backend, { connections: 128 });
  createServer((req, res) => {
    pool
      .stream({ path: req.url ?? '/', method: 'GET', headers: { 'x-forwarded-host': req.headers.host ?? '' } }, ({ statusCode, headers }) => {
        res.writeHead(statusCode, headers as Record<string, string>);
        return res;
      })
      .catch(() => {
        res.statusCode = 502;
        res.end();
      });
  }).listen(port, '127.0.0.1');
}
