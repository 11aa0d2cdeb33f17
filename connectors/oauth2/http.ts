/**
 * What the GitHub, GitLab and Microsoft connectors share to talk to their upstream over HTTP: a request with
 * the login's abort signal, JSON read with a size bound, a bearer-token GET, every page of a list
 * (Link rel="next", bounded, never leaving the API's origin) and the authorization-code and
 * refresh-token grants. Failures become the user-safe errors of ../errors.ts after the reason is
 * logged; a token or a client secret never reaches a log line or a message.
 */
import type { Logger } from 'pino';
import { UpstreamMisconfigured, UpstreamUnavailable } from '../errors.js';
import { nextLink } from './link.js';

/** An answer bigger than this is not a user, a token or a page of teams: refused. */
export const MAX_BODY_BYTES = 1024 * 1024;
/** Pages of one list followed at most (at 100 a page: 2,000 orgs, teams or emails). */
export const MAX_PAGES = 20;

export interface Upstream {
  /** deps.upstreamFetch(rootCAs), made once at build. */
  readonly fetch: typeof globalThis.fetch;
  readonly log: Logger;
  /** "github", "gitlab": the prefix of log lines. */
  readonly name: string;
  /** Headers sent with every API request (User-Agent, API version). */
  readonly headers?: Readonly<Record<string, string>>;
}

/** The upstream refused the bearer token (401): revoked or expired. A refresh answers null on it. */
export class TokenRejected extends Error {
  constructor(readonly what: string) {
    super(`${what}: the access token was refused (401)`);
    this.name = 'TokenRejected';
  }
}

/** fetch, with a network, TLS or timeout failure logged and turned into UpstreamUnavailable. */
export async function send(up: Upstream, what: string, url: string, init: RequestInit, signal: AbortSignal): Promise<Response> {
  try {
    return await up.fetch(url, { ...init, signal, redirect: 'manual' });
  } catch (err: unknown) {
    const reason = signal.aborted ? 'timed out' : describe(err);
    up.log.warn({ reason }, `${up.name}: ${what} failed: ${reason}`);
    throw new UpstreamUnavailable(undefined, { cause: err });
  }
}

/** The body as JSON, at most MAX_BODY_BYTES; anything else is a misconfiguration (a proxy's HTML page). */
export async function readJson(up: Upstream, what: string, res: Response, signal: AbortSignal): Promise<unknown> {
  let text: string;
  try {
    text = await readBounded(res);
  } catch (err: unknown) {
    const reason = signal.aborted ? 'timed out' : describe(err);
    up.log.warn({ reason }, `${up.name}: ${what}: reading the answer failed: ${reason}`);
    throw err instanceof TooLarge ? new UpstreamMisconfigured(undefined, { cause: err }) : new UpstreamUnavailable(undefined, { cause: err });
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    up.log.warn({ status: res.status }, `${up.name}: ${what}: the answer (HTTP ${res.status}) is not JSON`);
    throw new UpstreamMisconfigured();
  }
}

/** GET `url` with the bearer token: the JSON body and the next page's URL, if any. */
export async function getJson(up: Upstream, what: string, url: string, token: string, signal: AbortSignal): Promise<{ body: unknown; next?: string }> {
  const res = await send(up, what, url, { headers: { ...up.headers, accept: 'application/json', authorization: `Bearer ${token}` } }, signal);
  if (res.status === 401) {
    await res.body?.cancel();
    throw new TokenRejected(what);
  }
  if (res.status !== 200) throw await statusError(up, what, res);
  const body = await readJson(up, what, res, signal);
  const next = nextLink(res.headers.get('link'), url);
  return next === undefined ? { body } : { body, next };
}

/** Every item of a paginated list, following Link rel="next" for at most MAX_PAGES pages. */
export async function getAll(up: Upstream, what: string, url: string, token: string, signal: AbortSignal): Promise<unknown[]> {
  const items: unknown[] = [];
  const origin = new URL(url).origin;
  let at: string | undefined = url;
  for (let page = 0; at !== undefined; page++) {
    if (page === MAX_PAGES) {
      up.log.warn(`${up.name}: ${what}: more than ${MAX_PAGES} pages; refusing a partial list`);
      throw new UpstreamMisconfigured();
    }
    // The token goes to the API's origin only, whatever a Link header says.
    if (new URL(at).origin !== origin) {
      up.log.warn({ next: new URL(at).origin }, `${up.name}: ${what}: the next page is on another origin; refused`);
      throw new UpstreamMisconfigured();
    }
    const { body, next }: { body: unknown; next?: string } = await getJson(up, what, at, token, signal);
    if (!Array.isArray(body)) {
      up.log.warn(`${up.name}: ${what}: the answer is not a list`);
      throw new UpstreamMisconfigured();
    }
    items.push(...(body as unknown[]));
    at = next;
  }
  return items;
}

export interface Tokens {
  readonly accessToken: string;
  readonly refreshToken?: string;
}

/** An OAuth2 error answer of the token endpoint (RFC 6749 §5.2): the code only, never a secret. */
export type TokenAnswer = { readonly ok: true; readonly tokens: Tokens; readonly idToken?: string } | { readonly ok: false; readonly error: string; readonly description?: string };

/**
 * POSTs a grant to the token endpoint (client_secret_post, as GitHub and GitLab document it) and
 * reads the tokens, or the OAuth2 error. GitHub answers errors with HTTP 200; both forms are read.
 */
export async function tokenGrant(up: Upstream, tokenUrl: string, grant: URLSearchParams, signal: AbortSignal): Promise<TokenAnswer> {
  const what = `the token request (${grant.get('grant_type') ?? 'authorization_code'})`;
  const res = await send(up, what, tokenUrl, {
    method: 'POST',
    headers: { ...up.headers, accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded' },
    body: grant.toString(),
  }, signal);
  if (res.status >= 500 || res.status === 429) throw await statusError(up, what, res);
  const body = await readJson(up, what, res, signal);
  const field = (key: string): string | undefined => {
    const value = typeof body === 'object' && body !== null ? (body as Record<string, unknown>)[key] : undefined;
    return typeof value === 'string' && value !== '' ? value : undefined;
  };
  const error = field('error');
  const accessToken = field('access_token');
  if (error !== undefined || accessToken === undefined || res.status !== 200) {
    const description = field('error_description');
    return { ok: false, error: error ?? `HTTP ${res.status} without an access token`, ...(description !== undefined ? { description: description.slice(0, 200) } : {}) };
  }
  const refreshToken = field('refresh_token');
  // The ID token stays apart from `tokens`, which GitLab keeps as connectorData.
  const idToken = field('id_token');
  return { ok: true, tokens: { accessToken, ...(refreshToken !== undefined ? { refreshToken } : {}) }, ...(idToken !== undefined ? { idToken } : {}) };
}

/** A non-200 answer logged with its status; 5xx and 429 are the upstream's trouble, the rest a misconfiguration. */
export async function statusError(up: Upstream, what: string, res: Response): Promise<Error> {
  await res.body?.cancel();
  up.log.warn({ status: res.status }, `${up.name}: ${what} answered HTTP ${res.status}`);
  return res.status >= 500 || res.status === 429 ? new UpstreamUnavailable() : new UpstreamMisconfigured();
}

class TooLarge extends Error {}

async function readBounded(res: Response): Promise<string> {
  const declared = Number(res.headers.get('content-length') ?? '0');
  if (declared > MAX_BODY_BYTES) {
    await res.body?.cancel();
    throw new TooLarge(`the answer is larger than ${MAX_BODY_BYTES} bytes`);
  }
  if (res.body === null) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = res.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_BODY_BYTES) {
      await reader.cancel();
      throw new TooLarge(`the answer is larger than ${MAX_BODY_BYTES} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The innermost cause's code and message (ECONNREFUSED, a certificate error), never a header or a body. */
export function describe(err: unknown): string {
  let cause: unknown = err;
  for (let i = 0; i < 5 && cause instanceof Error && cause.cause !== undefined; i++) cause = cause.cause;
  if (!(cause instanceof Error)) return String(cause);
  const code = (cause as { code?: unknown }).code;
  return `${typeof code === 'string' ? `${code}: ` : ''}${cause.message}`;
}
