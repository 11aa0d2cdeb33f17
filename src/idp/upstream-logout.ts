/**
 * Back-channel logout from an upstream `oidc` connector of the bundled provider: a logout token
 * its provider sent to `<url>/auth/backchannel-logout`, once verified as any logout token is
 * (src/oidc/logout-token.ts, with that connector's issuer, client id and keys), ends the
 * provider sessions the upstream session `sid` logged in, or every one of the upstream user
 * `sub` when the token names only `sub` (./storage/upstream-sessions.ts). Each ends as
 * ./session-end.ts ends it (the applications get their logout tokens), and svc's own sessions
 * of it end with it. Knows nothing of HTTP.
 */
import type { LogoutTokenSource } from '../../connectors/connector.js';
import type { EndContext, SessionRegistry } from '../session/registry.js';
import type { LogoutRequest } from '../oidc/logout-token.js';
import type { ConnectorSource } from './connectors/connector-source.js';
import type { ProviderSessionEnd } from './session-end.js';
import type { UpstreamLinks } from './storage/upstream-sessions.js';

export interface UpstreamLogoutDeps {
  readonly connectors: ConnectorSource;
  readonly links: UpstreamLinks;
  readonly sessionEnd: Pick<ProviderSessionEnd, 'endByUid'>;
  readonly sessions: Pick<SessionRegistry, 'endBySid'>;
  /** The bundled provider's issuer: svc's sessions from it carry its `svc` client's `sid`. */
  readonly svcIssuer: string;
}

/** One upstream's logout tokens: what verifies them, and what a verified one ends. */
export interface UpstreamLogout {
  readonly source: LogoutTokenSource;
  /** Ends what the verified request names; how many svc sessions ended. */
  end(request: LogoutRequest, context: EndContext): Promise<number>;
}

/**
 * The connector whose provider is `issuer` and whose client id is among `audiences`, if any: the
 * token's unverified claims only choose whose keys verify it.
 */
export function upstreamLogoutFor(deps: UpstreamLogoutDeps, issuer: string, audiences: readonly string[]): UpstreamLogout | undefined {
  const source = sourceOf(deps.connectors, issuer, audiences);
  if (source === undefined) return undefined;
  return {
    source,
    async end(request, context) {
      const linked = request.sid !== undefined
        ? await deps.links.ofSid(source.issuer, request.sid)
        : await deps.links.ofSub(source.issuer, request.sub as string);
      let ended = 0;
      for (const { uid, account } of linked) {
        const { outcome, sids = [] } = await deps.sessionEnd.endByUid(uid, account, 'upstream-backchannel');
        if (outcome !== 'other-account') await deps.links.forget(source.issuer, request, uid);
        for (const sid of sids) ended += await deps.sessions.endBySid(deps.svcIssuer, sid, context);
      }
      return ended;
    },
  };
}

function sourceOf(connectors: ConnectorSource, issuer: string, audiences: readonly string[]): LogoutTokenSource | undefined {
  for (const { id } of connectors.list()) {
    const connector = connectors.get(id);
    const source = connector?.kind === 'browser' ? connector.logoutTokens : undefined;
    if (source !== undefined && source.issuer === issuer && audiences.includes(source.clientId)) return source;
  }
  return undefined;
}
