/**
 * A small HTTP forwarder in front of svc replicas that serve one `url`, as a load balancer would
 * be: each request goes, Host header kept, to the replica the test chooses for it. Hop-by-hop
 * headers stay on their own connection (test/helpers/hop-by-hop.ts).
 */
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import { endToEndHeaders } from './hop-by-hop.js';

export interface Forwarder {
  readonly url: string;
  close(): Promise<void>;
}

/** `upstream`: the base URL of the replica this request goes to; undefined answers 502. */
export async function startForwarder(port: number, upstream: (req: IncomingMessage) => string | undefined): Promise<Forwarder> {
  const server: Server = createServer((req, res) => {
    const to = upstream(req);
    if (to === undefined) return void res.writeHead(502).end();
    const { hostname, port: upstreamPort } = new URL(to);
    const out = request({ host: hostname, port: upstreamPort, method: req.method, path: req.url, headers: endToEndHeaders(req.headers) }, (up) => {
      res.writeHead(up.statusCode ?? 502, endToEndHeaders(up.headers));
      up.pipe(res);
    });
    out.on('error', () => res.destroy());
    req.pipe(out);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
