/**
 * What the GitHub and GitLab fakes share: an HTTPS server on 127.0.0.1 whose certificate comes
 * from a throwaway test CA (test-ca.ts), so that a connector reaches it only when given that CA
 * as `rootCA`; small request and answer helpers; single-use codes and bearer tokens; and
 * failures injected on a path (a 5xx, or a delay) for the error cases.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { Socket } from 'node:net';
import { makeTestCa } from './test-ca.js';

export interface HttpsFake {
  /** `https://127.0.0.1:<port>`. */
  readonly url: string;
  /** `127.0.0.1:<port>`: what GitHub's `hostName` takes. */
  readonly host: string;
  readonly port: number;
  /** The PEM of the CA that signed the server's certificate: what `rootCA` takes. */
  readonly caPem: string;
  close(): Promise<void>;
}

export type Handler = (req: IncomingMessage, url: URL, res: ServerResponse) => Promise<void> | void;

export async function startHttpsFake(handle: Handler): Promise<HttpsFake> {
  const ca = makeTestCa();
  const sockets = new Set<Socket>();
  const server: Server = createServer({ cert: ca.certPem, key: ca.keyPem }, (req, res) => {
    const url = new URL(req.url ?? '/', 'https://127.0.0.1');
    Promise.resolve(handle(req, url, res)).catch((err: unknown) => {
      if (!res.headersSent) json(res, 500, { message: `fake: ${String(err)}` });
      else res.destroy();
    });
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  // A client that refuses the certificate resets the handshake; that is a test case, not a crash.
  server.on('tlsClientError', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (typeof address !== 'object' || address === null) throw new Error('no address');
  return {
    url: `https://127.0.0.1:${address.port}`,
    host: `127.0.0.1:${address.port}`,
    port: address.port,
    caPem: ca.caPem,
    close: () => new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    }),
  };
}

export function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
  res.end(JSON.stringify(body));
}

export function redirect(res: ServerResponse, to: URL): void {
  res.writeHead(302, { location: to.href });
  res.end();
}

export function page(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8' });
  res.end(`<!doctype html><title>${text}</title><p>${text}</p>`);
}

export async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

/** The bearer token of `Authorization: Bearer <t>` (or GitHub's older `token <t>`). */
export function bearer(req: IncomingMessage): string | undefined {
  const match = /^(?:bearer|token)\s+(\S+)$/i.exec(req.headers.authorization ?? '');
  return match?.[1];
}

export const newSecret = (prefix: string): string => `${prefix}_${randomBytes(12).toString('hex')}`;

/**
 * One page of `items` as GitHub and GitLab paginate: `page` (1-based) and `per_page` from the
 * query, `per_page` capped at `maxPerPage`, and a Link header with rel="next"/"last"/"first"/"prev".
 */
export function paginate<T>(items: readonly T[], url: URL, base: string, maxPerPage: number): { items: T[]; link?: string } {
  const perPage = Math.max(1, Math.min(maxPerPage, Number(url.searchParams.get('per_page') ?? maxPerPage) || maxPerPage));
  const pageNo = Math.max(1, Number(url.searchParams.get('page') ?? '1') || 1);
  const last = Math.max(1, Math.ceil(items.length / perPage));
  const at = (n: number): string => {
    const u = new URL(url.pathname, base);
    u.searchParams.set('per_page', String(perPage));
    u.searchParams.set('page', String(n));
    return u.href;
  };
  const links: string[] = [];
  if (pageNo < last) links.push(`<${at(pageNo + 1)}>; rel="next"`, `<${at(last)}>; rel="last"`);
  if (pageNo > 1) links.push(`<${at(1)}>; rel="first"`, `<${at(pageNo - 1)}>; rel="prev"`);
  const slice = items.slice((pageNo - 1) * perPage, pageNo * perPage);
  return links.length > 0 ? { items: slice, link: links.join(', ') } : { items: slice };
}

/** A failure injected for requests whose path starts with `path`: an HTTP status, for `times` requests. */
export interface InjectedFailure {
  readonly path: string;
  readonly status: number;
  times: number;
}

/** Takes one use of the first injected failure matching `path`, if any. */
export function injected(failures: InjectedFailure[], path: string): InjectedFailure | undefined {
  const failure = failures.find((f) => path.startsWith(f.path) && f.times > 0);
  if (failure !== undefined) failure.times -= 1;
  return failure;
}
