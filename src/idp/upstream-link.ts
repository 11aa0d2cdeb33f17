/**
 * Links a provider session to the upstream session its login came from (./storage/upstream-sessions.ts),
 * at the resume that ends the login: only there are both known, the upstream session from the
 * login result (/finish puts it under UPSTREAM_SESSION_RESULT) and the provider session it logs
 * in. Runs after oidc-provider saved the session. Fails closed: a session whose link cannot be
 * written is destroyed and the login answered 503, so that no provider session exists that the
 * upstream's logout could not end.
 */
import type { KoaContextWithOIDC } from 'oidc-provider';
import type Provider from 'oidc-provider';
import type { Logger } from 'pino';
import type { UpstreamSession } from '../../connectors/connector.js';
import { setPageHeaders } from '../http/security-headers.js';
import { SESSION_TTL_S } from './lifetimes.js';
import { UPSTREAM_SESSION_RESULT } from './login/login-flow.js';
import { errorPage } from './login/pages.js';
import { TooManyLinkedSessions, type UpstreamLinks } from './storage/upstream-sessions.js';


/** The upstream session in a resumed login's result, when it is one /finish put there. */
export function upstreamOfResult(result: unknown): UpstreamSession | undefined {
  const login = (result as { login?: Record<string, unknown> } | undefined)?.login;
  const value = login?.[UPSTREAM_SESSION_RESULT] as Partial<UpstreamSession> | undefined;
  if (typeof value?.issuer !== 'string' || typeof value.sub !== 'string') return undefined;
  return { issuer: value.issuer, sub: value.sub, ...(typeof value.sid === 'string' ? { sid: value.sid } : {}) };
}

export interface UpstreamLinkDeps {
  readonly links: UpstreamLinks;
  readonly log: Pick<Logger, 'warn'>;
}

/** Middleware of the provider: at a resume with an upstream session, links the session it saved. */
export function linkUpstreamSession(provider: Provider, deps: UpstreamLinkDeps, isResume: (ctx: KoaContextWithOIDC) => boolean) {
  const isLive = async (uid: string): Promise<boolean> => (await provider.Session.findByUid(uid))?.accountId !== undefined;
  return async function linkUpstream(ctx: KoaContextWithOIDC, next: () => Promise<void>): Promise<void> {
    await next();
    if (!isResume(ctx)) return;
    const upstream = upstreamOfResult(ctx.oidc?.result);
    const session = ctx.oidc?.session;
    if (upstream === undefined || session?.accountId === undefined) return;
    try {
      await deps.links.link(upstream, session.uid, session.accountId, SESSION_TTL_S * 1000, isLive);
    } catch (err: unknown) {
      deps.log.warn({ err: err instanceof TooManyLinkedSessions ? undefined : err, reason: err instanceof Error ? err.message : String(err) }, 'identity provider: the login\'s upstream session cannot be recorded for back-channel logout; login refused');
      await session.destroy().catch(() => undefined);
      ctx.remove('Location');
      ctx.status = 503;
      ctx.type = 'html';
      setPageHeaders(ctx, 'idp');
      ctx.body = errorPage('Login failed', err instanceof TooManyLinkedSessions ? err.message : 'The login cannot be recorded now. Try again in a moment.');
    }
  };
}
