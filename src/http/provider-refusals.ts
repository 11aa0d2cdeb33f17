/**
 * oidc-provider's refusals in svc's log: the provider answers a bad token request (a wrong
 * client secret, a used or expired code, a wrong PKCE verifier) to the client only, and emits
 * `<route>.error` on itself. Each becomes one info line with the client, the error and its
 * detail, and the request id, so that an operator can tell why a client's exchange failed.
 * A device-flow client polling before the person approved (`authorization_pending`,
 * `slow_down`) is normal and goes at debug.
 */
import type { Logger } from 'pino';
import { printable } from '../lib/printable.js';

/** The events the provider emits for a refused request of a client, and what each is. */
const REFUSAL_EVENTS: Readonly<Record<string, string>> = {
  'grant.error': 'token request',
  'authorization.error': 'authorization request',
  'device_authorization.error': 'device authorization request',
  'revocation.error': 'revocation request',
  'introspection.error': 'introspection request',
  'userinfo.error': 'userinfo request',
  'end_session.error': 'logout request',
};

const ROUTINE = new Set(['authorization_pending', 'slow_down']);

/** The parts of the provider's context and error read here (oidc-provider's documented event arguments). */
interface RefusalContext {
  readonly oidc?: { readonly client?: { readonly clientId?: string }; readonly params?: Record<string, unknown> };
  readonly res?: { getHeader(name: string): unknown };
}
interface RefusalError {
  readonly error?: string;
  readonly error_description?: string;
  readonly error_detail?: string;
}

interface EventSource {
  on(event: string, listener: (ctx: RefusalContext, err: RefusalError) => void): unknown;
}

export function logProviderRefusals(provider: EventSource, log: Pick<Logger, 'info' | 'debug'>): void {
  for (const [event, what] of Object.entries(REFUSAL_EVENTS)) {
    provider.on(event, (ctx, err) => {
      const fields = refusalFields(ctx, err);
      const line = `identity provider: ${what} refused: ${fields.error}${fields.detail === undefined ? '' : ` (${fields.detail})`}`;
      if (ROUTINE.has(fields.error)) log.debug(fields, line);
      else log.info(fields, line);
    });
  }
}

function refusalFields(ctx: RefusalContext, err: RefusalError): { client: string; error: string; detail?: string; requestId: string } {
  const named = ctx.oidc?.client?.clientId ?? ctx.oidc?.params?.['client_id'];
  const client = typeof named === 'string' ? printable(named.slice(0, 100)) : '(none)';
  const error = printable(String(err.error ?? 'invalid_request').slice(0, 60));
  const said = err.error_detail ?? err.error_description;
  const requestId = String(ctx.res?.getHeader('X-Request-Id') ?? '');
  return { client, error, ...(said !== undefined ? { detail: printable(said.slice(0, 200)) } : {}), requestId };
}
