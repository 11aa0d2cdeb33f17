/**
 * The load balancer in front of the soak's svc processes, at the `url` they all serve: each
 * request and WebSocket upgrade goes to the next process in turn; a process that refuses the
 * connection (killed, restarting) is skipped and the request sent to the next, as a balancer
 * with health checks would. Only a refused connection is retried: a request that reached a
 * process that then died is not (it may have done its work), and fails as a client would see it;
 * nor is anything else, but for a request on a reused connection that the process closed as the
 * request was sent (reset before any answer), which goes again, as Node's documentation advises.
 * Hop-by-hop headers stay on their own connection: the balancer's clients are told its own
 * keep-alive timeout, not svc's. It counts how each client connection ended, and when it cut one
 * itself, why: a client reset on a connection the balancer closed idle, or cut, shows there.
 */
import { Agent, createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { endToEndHeaders } from '../../test/helpers/hop-by-hop.js';

/** How the balancer's client connections ended, counted by which side ended each first. */
export interface ClientConnections {
  /** The client closed it first (an idle connection its own keep-alive timeout ended, or a WebSocket it closed). */
  byClient: number;
  /** The balancer closed it first: idle past its keep-alive timeout, or at shutdown. */
  idleClosed: number;
  /** The balancer cut it because the process behind failed the request or closed the WebSocket. */
  cut: number;
  /** The first cuts, each with when and why. */
  readonly cuts: { readonly at: number; readonly reason: string }[];
}

export interface Balancer {
  readonly url: string;
  readonly clientConnections: ClientConnections;
  close(): Promise<void>;
}

/** Cuts remembered one by one; past this, counted only. */
const CUTS_KEPT = 200;

/** Request bodies are held until a process takes the connection (the 10 MB upload is the largest). */
const MAX_BODY = 16 << 20;

function refused(err: NodeJS.ErrnoException): boolean {
  return err.code === 'ECONNREFUSED';
}

/**
 * Idle connections to a process are closed after 2 s, before svc closes them (5 s): a balancer's
 * upstream keep-alive is set shorter than the server's, or a request sent on a connection the
 * server is closing at that moment is reset.
 */
const agent = new Agent({ keepAlive: true, timeout: 2_000 });

/** A reused connection reset before any answer: the server closed it as the request left (Node's documented keep-alive race). */
function closedUnderfoot(err: NodeJS.ErrnoException, reused: boolean): boolean {
  return reused && err.code === 'ECONNRESET';
}

export async function startBalancer(port: number, upstreams: () => readonly string[]): Promise<Balancer> {
  let turn = 0;
  const clientConnections: ClientConnections = { byClient: 0, idleClosed: 0, cut: 0, cuts: [] };
  const cutSockets = new WeakSet<Duplex>();
  const cut = (socket: Duplex, reason: string): void => {
    if (socket.destroyed) return;
    clientConnections.cut++;
    if (clientConnections.cuts.length < CUTS_KEPT) clientConnections.cuts.push({ at: Date.now(), reason });
    cutSockets.add(socket);
    socket.destroy();
  };
  const cutAnswer = (res: ServerResponse, reason: string): void => (res.socket === null ? void res.destroy() : cut(res.socket, reason));
  const order = (): string[] => {
    const all = upstreams();
    const first = turn++ % Math.max(all.length, 1);
    return [...all.slice(first), ...all.slice(0, first)];
  };

  function forward(req: IncomingMessage, res: ServerResponse, body: Buffer, targets: string[]): void {
    const to = targets.shift();
    if (to === undefined) return void res.writeHead(502).end();
    const { hostname, port: upstreamPort } = new URL(to);
    const out = request({ host: hostname, port: upstreamPort, method: req.method, path: req.url, headers: endToEndHeaders(req.headers), agent }, (up) => {
      res.writeHead(up.statusCode ?? 502, endToEndHeaders(up.headers));
      up.pipe(res);
      up.on('error', (err) => cutAnswer(res, `${to} failed mid-answer: ${err.message}`));
    });
    out.on('error', (err: NodeJS.ErrnoException) => {
      if (res.headersSent) return void cutAnswer(res, `${to} failed mid-answer: ${err.message}`);
      if (refused(err)) return forward(req, res, body, targets);
      if (closedUnderfoot(err, out.reusedSocket)) return forward(req, res, body, [to, ...targets]);
      cutAnswer(res, `${to} failed before answering: ${err.message}`);
    });
    out.end(body);
  }

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY) return void req.destroy();
      chunks.push(chunk);
    });
    req.on('end', () => forward(req, res, Buffer.concat(chunks), order()));
  });
  server.on('connection', (socket: Socket) => {
    let ended: 'client' | 'balancer' | undefined;
    socket.on('end', () => (ended ??= 'client'));
    socket.on('error', () => (ended ??= 'client'));
    socket.on('finish', () => (ended ??= 'balancer'));
    socket.on('close', () => {
      if (cutSockets.has(socket)) return;
      if ((ended ?? 'balancer') === 'client') clientConnections.byClient++;
      else clientConnections.idleClosed++;
    });
  });
  server.on('upgrade', (req: IncomingMessage, client: Duplex, head: Buffer) => {
    const tryNext = (targets: string[]): void => {
      const to = targets.shift();
      if (to === undefined) return void cut(client, 'no process took the WebSocket');
      const { hostname, port: upstreamPort } = new URL(to);
      const up: Socket = connect(Number(upstreamPort), hostname, () => {
        up.write(`${req.method ?? 'GET'} ${req.url ?? '/'} HTTP/1.1\r\n${Object.entries(req.headers).map(([k, v]) => `${k}: ${String(v)}`).join('\r\n')}\r\n\r\n`);
        if (head.length > 0) up.write(head);
        up.pipe(client).pipe(up);
      });
      up.on('error', (err: NodeJS.ErrnoException) => (refused(err) && up.bytesRead === 0 ? tryNext(targets) : cut(client, `${to} failed a WebSocket: ${err.message}`)));
      client.on('error', () => up.destroy());
      client.on('close', () => up.destroy());
      up.on('close', () => cut(client, `${to} closed a WebSocket`));
    };
    tryNext(order());
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${port}`,
    clientConnections,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        agent.destroy();
        server.close(() => resolve());
      }),
  };
}
