/**
 * `/metrics` on an address of its own (--metrics-listen), as Argo CD serves metrics on a port of
 * their own: the scraper reaches it on an internal address, and the public listener has none.
 * Nothing but GET /metrics is served there.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { MetricsExposition } from '../http/routes/health.js';
import { listenUrl } from './listen-url.js';
import type { Services } from './services.js';

export interface MetricsListener {
  readonly url: string;
  close(): Promise<void>;
}

export async function listenForMetrics(services: Pick<Services, 'log'>, exposition: MetricsExposition, address: { readonly host: string; readonly port: number }): Promise<MetricsListener> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('only GET /metrics is served here\n');
      return;
    }
    exposition.text().then(
      (text) => res.writeHead(200, { 'content-type': exposition.contentType }).end(req.method === 'HEAD' ? undefined : text),
      (err: unknown) => {
        services.log.error({ err }, 'metrics could not be collected');
        res.writeHead(500).end();
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err) => reject(new Error(`--metrics-listen ${address.host}:${address.port}: ${err.message}`, { cause: err })));
    server.listen(address.port, address.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const url = listenUrl({ host: address.host, port, tls: false });
  services.log.info({ metrics: `${url}/metrics` }, 'metrics served on their own listener');
  return {
    url,
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
