/**
 * Personal API tokens of SSO users: make, list and delete one's own. Knows no HTTP. Making one
 * needs, in order: an SSO login session of the bundled provider (a token never makes a token,
 * so a stolen one cannot outlive itself); the rule `tokens, create, self`; a name; an
 * `expiresIn` within `users.ssoTokens.maxLifetime`; the upstream confirming the user now
 * (recheck.ts; an upstream that cannot answer refuses, fail closed); room under the per-user
 * cap. The token's groups are the session's that the upstream still confirms.
 */
import { randomUUID } from 'node:crypto';
import type { AuditSource, AuditTrail } from '../audit/trail.js';
import { InvalidRequest, PermissionDenied, Unauthenticated } from '../errors.js';
import { formatDuration } from '../lib/duration.js';
import { printable } from '../lib/printable.js';
import type { Sealer } from '../lib/sealed.js';
import { personOf } from '../person.js';
import { shownName, type Principal } from '../principal.js';
import type { IdentitySource, Recheck } from './recheck.js';
import { recordKeyOf, type IndexedUser, type SsoTokenRecord } from './records.js';
import { MAX_LIFETIME_KEY } from './settings-section.js';
import type { SsoTokenStore } from './token-store.js';
import type { SsoTokenFormat } from './token-format.js';
import { TOKENS_ACTION, TOKENS_OBJECT, TOKENS_RESOURCE } from './verifier.js';

const MAX_NAME_LENGTH = 100;

export interface CreateRequest {
  readonly name: string;
  readonly expiresInSeconds: number;
}

export interface TokenView {
  readonly id: string;
  readonly name: string;
  /** RFC 3339. */
  readonly createdAt: string;
  readonly expiresAt: string;
  readonly groups: readonly string[];
}

export interface PersonalTokens {
  create(caller: Principal, request: CreateRequest, source: AuditSource): Promise<{ readonly id: string; readonly token: string; readonly expiresAt: string }>;
  list(caller: Principal): readonly TokenView[];
  remove(caller: Principal, id: string, source: AuditSource): Promise<void>;
}

export interface PersonalTokensDeps {
  /** undefined without the bundled provider: an external provider's users cannot be rechecked here. */
  readonly identities: IdentitySource | undefined;
  readonly providerIssuer: string | undefined;
  readonly format: SsoTokenFormat;
  readonly store: SsoTokenStore;
  readonly recheck: Pick<Recheck, 'confirmNow'>;
  readonly users: () => ReadonlyMap<string, IndexedUser>;
  readonly sealer: () => Sealer;
  readonly allowed: (principal: Principal) => boolean;
  readonly maxLifetimeMs: () => number;
  readonly maxTokens: number;
  readonly audit: AuditTrail;
  readonly now: () => number;
}

export function createPersonalTokens(deps: PersonalTokensDeps): PersonalTokens {
  /** The SSO user behind a session or one of its tokens; local and workload callers are told where to go. */
  function ssoUser(caller: Principal): string {
    if (caller.kind === 'session' || caller.kind === 'apiKey') {
      throw new InvalidRequest(`local accounts make API tokens with POST /api/v1/account/${caller.username}/token; /api/v1/session/tokens is for single sign-on users`);
    }
    if ((caller.kind !== 'sso' && caller.kind !== 'ssoApiKey') || caller.issuer !== deps.providerIssuer) {
      throw new PermissionDenied('personal API tokens are for users of svc\'s bundled identity provider');
    }
    return personOf(caller).subject;
  }

  function checkRequest(caller: Principal, request: CreateRequest): void {
    if (caller.kind !== 'sso') throw new PermissionDenied('a personal API token cannot make another one: log in to make a token');
    if (!deps.allowed(caller)) throw new PermissionDenied(`no rule grants '${TOKENS_RESOURCE}, ${TOKENS_ACTION}, ${TOKENS_OBJECT}' to '${printable(shownName(caller))}'; ask an administrator for it`);
    const name = request.name.trim();
    if (name === '' || name.length > MAX_NAME_LENGTH || /\p{Cc}/u.test(name)) throw new InvalidRequest(`field 'name' must be 1 to ${MAX_NAME_LENGTH} printable characters`);
    const max = deps.maxLifetimeMs();
    if (!Number.isSafeInteger(request.expiresInSeconds) || request.expiresInSeconds <= 0) throw new InvalidRequest("field 'expiresIn' must be more than 0: personal API tokens always expire");
    if (request.expiresInSeconds * 1000 > max) {
      throw new InvalidRequest(`expiresIn ${formatDuration(request.expiresInSeconds * 1000)} is longer than ${MAX_LIFETIME_KEY} (${formatDuration(max)}); ask for a shorter lifetime`);
    }
  }

  function event(action: string, caller: Principal, source: AuditSource, record: SsoTokenRecord) {
    return {
      category: 'iam' as const, type: action === 'token-created' ? 'creation' as const : 'deletion' as const, action, outcome: 'success' as const,
      user: { id: personOf(caller).subject, domain: personOf(caller).issuer, name: shownName(caller), groups: record.groups }, source,
      svc: { tokenKind: 'sso', tokenId: record.id, tokenName: record.name, expiresAt: new Date(record.exp * 1000).toISOString() },
    };
  }

  return {
    async create(caller, request, source) {
      const sub = ssoUser(caller);
      checkRequest(caller, request);
      const held = deps.identities === undefined ? undefined : await deps.identities.find(sub);
      if (held === undefined) throw new Unauthenticated('the identity provider no longer holds this login; log in again to make a token');
      const name = shownName(caller);
      const identity = deps.sealer().seal(JSON.stringify(held.identity), recordKeyOf(sub));
      const user = { sub, name, connectorId: held.connectorId, identity };
      const confirmed = await deps.recheck.confirmNow(user, held.identity);
      const upstream = new Set(confirmed.groups);
      const iat = Math.floor(deps.now() / 1000);
      const record: SsoTokenRecord = {
        id: randomUUID(), name: request.name.trim(), jti: randomUUID(), iat, exp: iat + request.expiresInSeconds,
        groups: caller.groups.filter((g) => upstream.has(g)),
      };
      const token = await deps.format.sign({ sub, jti: record.jti, iat, exp: record.exp });
      await deps.store.add(user, record, deps.maxTokens);
      deps.audit.record(event('token-created', caller, source, record));
      return { id: record.id, token, expiresAt: new Date(record.exp * 1000).toISOString() };
    },

    list(caller) {
      const sub = ssoUser(caller);
      const user = deps.users().get(recordKeyOf(sub));
      if (user?.sub !== sub) return [];
      return user.tokens.map((t) => ({
        id: t.id, name: t.name, createdAt: new Date(t.iat * 1000).toISOString(), expiresAt: new Date(t.exp * 1000).toISOString(), groups: t.groups,
      }));
    },

    async remove(caller, id, source) {
      const removed = await deps.store.remove(ssoUser(caller), id);
      deps.audit.record(event('token-deleted', caller, source, removed));
    },
  };
}
