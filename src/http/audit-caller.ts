/** The `user`, `source` and token id of an audit event about a request's caller (a principal already read). */
import type Koa from 'koa';
import type { AuditSource, AuditUser } from '../audit/trail.js';
import { personOf } from '../person.js';
import type { Principal } from '../principal.js';
import { auditSourceOf } from './audit-source.js';
import type { TrustedProxies } from './client-address.js';
import type { AppState } from './state.js';

/** `user.domain` and `user.id` are the caller's person (person.ts): `alice` of `svc` is never `alice` of a provider. */
export function auditUserOf(principal: Principal): AuditUser {
  const person = personOf(principal);
  return { name: principal.displayName ?? principal.username, id: person.subject, domain: person.issuer, ...(principal.groups.length > 0 ? { groups: principal.groups } : {}) };
}

export function auditCaller(ctx: Koa.ParameterizedContext<AppState>, principal: Principal, trusted: TrustedProxies): { readonly user: AuditUser; readonly source: AuditSource } {
  return { user: auditUserOf(principal), source: auditSourceOf(ctx.req, ctx.state.requestId, trusted) };
}

/**
 * `svc.tokenId` of the caller's token: an API token by the id its owner and `token-created` know
 * it by, a session by its id as `session list` shows it (its jti). An API token without its id
 * (none should reach here: http/caller.ts's verifiers set it) is named by no id rather than by
 * its jti, which an auditor could not match to any token.
 */
export function auditTokenIdOf(principal: Principal): string {
  if (principal.kind === 'apiKey' || principal.kind === 'ssoApiKey') return principal.apiTokenId ?? '';
  return principal.tokenId;
}
