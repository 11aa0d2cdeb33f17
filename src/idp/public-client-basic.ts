/**
 * A public client's HTTP Basic header with its own id and an empty password, as oidc-agent sends
 * on every request to the token and device endpoints (issue 53), is taken as no authentication,
 * as Dex takes it. oidc-provider refuses that header (`client_secret must be provided`) before it
 * looks the client up, and oidc-agent's token poll names its client in the header only, so the
 * header alone cannot simply be dropped: in that one case svc reads the (small) form, names the
 * client there, and hands oidc-provider the form without the header. oidc-provider then finds
 * and authenticates exactly the client the header named, by `none`.
 *
 * Everything else passes unchanged and oidc-provider answers as before: a confidential client's
 * id, an id nobody registered, a form naming another client or carrying a secret or assertion
 * of its own. A non-empty password for a public client is refused by oidc-provider as always (a
 * public client has no secret), and counted first as a wrong secret by the client-secret guard
 * (./client-secret-guard.ts), which logs it as a failed client authentication.
 *
 * Rejected: rewriting the header to a fake secret the client "has" (it would need a second
 * registration of each public client), and reading every request's body (only this case pays).
 * The form reaches oidc-provider as an already-read body (`req.body`), which it supports and
 * warns about once per process ("already parsed request body detected").
 */
import type { IncomingMessage } from 'node:http';
import type Provider from 'oidc-provider';
import type { KoaContextWithOIDC } from 'oidc-provider';

/** The endpoints where oidc-provider authenticates a client. */
const CLIENT_AUTH_PATHS: ReadonlySet<string> = new Set(['/token', '/token/revocation', '/token/introspection', '/device/auth']);
/** Far above a token or device request (under 2 KB), below oidc-provider's own 56 KB bound. */
export const MAX_REWRITTEN_FORM_BYTES = 16 * 1024;
/** oidc-provider's check of an `Authorization: Basic` value (lib/shared/client_auth.js). */
const BASE64 = /^([A-Za-z0-9+/]*)(={0,2})$/u;
const VSCHAR = /^[\x20-\x7E]*$/u;

export interface BasicCredentials {
  readonly clientId: string;
  readonly secret: string;
}

/** A Basic header's id and password, decoded as oidc-provider decodes them; undefined where it would refuse the header. */
export function parseBasic(header: string | undefined): BasicCredentials | undefined {
  const parts = header?.split(' ') ?? [];
  if (parts.length !== 2 || parts[0]?.toLowerCase() !== 'basic') return undefined;
  const encoded = parts[1] as string;
  const match = BASE64.exec(encoded);
  if (!match?.[1] || (match[2] === '' ? match[1].length % 4 === 1 : encoded.length % 4 !== 0)) return undefined;
  const basic = Buffer.from(encoded, 'base64').toString('utf8');
  const colon = basic.indexOf(':');
  if (colon === -1) return undefined;
  try {
    const clientId = decodeURIComponent(basic.slice(0, colon).replace(/\+/g, '%20'));
    const secret = decodeURIComponent(basic.slice(colon + 1).replace(/\+/g, '%20'));
    return VSCHAR.test(clientId) && VSCHAR.test(secret) ? { clientId, secret } : undefined;
  } catch {
    return undefined;
  }
}

export interface PublicClientBasicDeps {
  /** Counts a secret a public client presented (always wrong: it has none); none in unit tests. */
  readonly countPresentedSecret?: (clientId: string) => Promise<void>;
}

type Next = () => Promise<void>;
type BodyCarrier = IncomingMessage & { body?: string };

/** The provider middleware (provider.use) that applies the rule above. */
export function publicClientBasic(provider: Provider, deps: PublicClientBasicDeps) {
  return async function publicClientEmptyBasic(ctx: KoaContextWithOIDC, next: Next): Promise<void> {
    if (ctx.method !== 'POST' || !CLIENT_AUTH_PATHS.has(ctx.path)) return next();
    const basic = parseBasic(ctx.get('authorization') || undefined);
    if (basic === undefined) return next();
    const client = await provider.Client.find(basic.clientId);
    if (client?.clientAuthMethod !== 'none') return next();
    if (basic.secret !== '') {
      await deps.countPresentedSecret?.(basic.clientId);
      return next();
    }
    if (!ctx.is('application/x-www-form-urlencoded')) return next();
    const length = Number(ctx.get('content-length') || Number.NaN);
    if (!(length <= MAX_REWRITTEN_FORM_BYTES)) return next();
    const text = await readForm(ctx.req, length);
    const req = ctx.req as BodyCarrier;
    if (text === undefined) {
      // Not the size announced: the header stays, and oidc-provider refuses it.
      req.body = '';
      return next();
    }
    const form = new URLSearchParams(text);
    if (!namesOnly(form, basic.clientId)) {
      // Not the exact case: oidc-provider gets the header and the form as they came, and refuses them.
      req.body = text;
      return next();
    }
    form.set('client_id', basic.clientId);
    delete ctx.req.headers.authorization;
    req.body = form.toString();
    return next();
  };
}

/** The form names no other client, once at most, and brings no credential of its own. */
function namesOnly(form: URLSearchParams, clientId: string): boolean {
  const named = form.getAll('client_id');
  if (named.length > 1 || (named.length === 1 && named[0] !== clientId)) return false;
  return !form.get('client_secret') && !form.has('client_assertion') && !form.has('client_assertion_type');
}

/** The body, if it is exactly `length` bytes. */
async function readForm(req: IncomingMessage, length: number): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let received = 0;
  for await (const chunk of req.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
    received += chunk.length;
    if (received > length) return undefined;
    chunks.push(chunk);
  }
  return received === length ? Buffer.concat(chunks).toString('utf8') : undefined;
}
