/**
 * The loopback listener of a native app's code flow (RFC 8252 §7.3): 127.0.0.1 only, one
 * callback at `/auth/callback` carrying this login's `state`, then closed; also closed when no
 * browser comes back within CALLBACK_TIMEOUT_MS, so a forgotten login never leaves a port open.
 * A request with another state (or none) is answered 400 and ignored, and the listener keeps
 * waiting: any page in the browser can reach a loopback port (an `<img>` to 127.0.0.1:8085), and
 * it must not end the login that is under way (issue 21).
 * The browser's answer is held until the CLI has exchanged the code (`finish`): the page says
 * the login is complete only once the tokens are in hand, and says why it failed otherwise.
 */
import { timingSafeEqual } from 'node:crypto';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { CliError } from '../errors.js';

/** How long the CLI waits for the browser to come back (the provider's pages are human-paced). */
export const CALLBACK_TIMEOUT_MS = 5 * 60 * 1000;
export const CALLBACK_PATH = '/auth/callback';
const LOOPBACK_HOST = '127.0.0.1';

const DONE_PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>svc login</title></head>
<body><p>svc: the login is complete; you may close this window.</p></body></html>
`;

function failedPage(reason: string): string {
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>svc login failed</title></head>
<body><p>svc: the login failed: ${escapeHtml(reason)}</p><p>See the terminal where svc runs; you may close this window.</p></body></html>
`;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** How the login ended, for the page the browser is shown. */
export type LoginOutcome = { readonly ok: true } | { readonly ok: false; readonly reason: string };

const NOT_THIS_LOGIN = `<!doctype html>
<html><head><meta charset="utf-8"><title>svc login</title></head>
<body><p>svc: this is not the login svc is waiting for; it was ignored.</p></body></html>
`;

export interface LoopbackListener {
  /** `http://127.0.0.1:<port>/auth/callback`: the redirect URI to register the request with. */
  readonly redirectUri: string;
  /** The full callback URL the browser brought (code or error) with the expected state, once. */
  readonly callback: Promise<URL>;
  /** Answers the browser that brought the callback; closing first answers it as failed. */
  finish(outcome: LoginOutcome): void;
  close(): void;
}

/** `state`: the login's own; only a callback carrying it is taken. */
export async function listenForCallback(port: number, state: string, timeoutMs = CALLBACK_TIMEOUT_MS): Promise<LoopbackListener> {
  let settle: { resolve: (url: URL) => void; reject: (err: Error) => void } | undefined;
  const callback = new Promise<URL>((resolve, reject) => (settle = { resolve, reject }));
  let held: ServerResponse | undefined;
  const server = createServer((req, res) => {
    // The bound port, not the one asked for (0 picks one): openid-client derives the
    // redirect_uri of the token request from this URL, and the provider compares it.
    const url = new URL(req.url ?? '/', redirectUri);
    if (req.method !== 'GET' || url.pathname !== CALLBACK_PATH) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    if (!sameState(url.searchParams.get('state'), state)) {
      res.writeHead(400, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' }).end(NOT_THIS_LOGIN);
      return;
    }
    if (held !== undefined) {
      res.writeHead(409, { 'content-type': 'text/plain' }).end('the login is already being finished\n');
      return;
    }
    held = res;
    clearTimeout(timer);
    server.close();
    settle?.resolve(url);
  });
  function finish(outcome: LoginOutcome): void {
    const res = held;
    if (res === undefined || res.headersSent) return;
    const page = outcome.ok ? DONE_PAGE : failedPage(outcome.reason);
    res.writeHead(outcome.ok ? 200 : 400, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', connection: 'close' }).end(page);
  }
  const timer = setTimeout(() => {
    settle?.reject(new CliError(`no answer from the browser within ${Math.round(timeoutMs / 60_000)} minutes; run 'svc login' again`));
    close();
  }, timeoutMs);
  function close(): void {
    finish({ ok: false, reason: 'svc stopped before the login was finished' });
    clearTimeout(timer);
    server.close();
    server.closeIdleConnections();
  }
  await listen(server, port);
  const bound = (server.address() as { port: number }).port;
  const redirectUri = `http://${LOOPBACK_HOST}:${bound}${CALLBACK_PATH}`;
  return { redirectUri, callback, finish, close };
}

function sameState(given: string | null, expected: string): boolean {
  if (given === null) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

function listen(server: Server, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      const why = err.code === 'EADDRINUSE' ? 'it is in use; pick another with --sso-port' : err.message;
      reject(new CliError(`cannot listen on ${LOOPBACK_HOST}:${port} for the SSO callback: ${why}`, { cause: err }));
    });
    server.listen(port, LOOPBACK_HOST, () => resolve());
  });
}
