/**
 * What the provider says about a user: the `sub` and the scope-gated claims of DESIGN §7, from
 * the connector's Identity. `sub` is Dex's, byte for byte (a protobuf of user id and connector
 * id, base64url without padding), so it is stable for one (connector, upstream user), opaque to
 * clients, and RBAC rules written for a Dex-based setup keep matching.
 */
import type { Identity } from '../../connectors/connector.js';

/** `0x0A len user_id 0x12 len conn_id`, each length a varint; an empty field is left out (proto3). */
export function subjectOf(userId: string, connectorId: string): string {
  return Buffer.concat([protoField(1, userId), protoField(2, connectorId)]).toString('base64url');
}

function protoField(field: number, value: string): Buffer {
  const bytes = Buffer.from(value, 'utf8');
  if (bytes.length === 0) return Buffer.alloc(0);
  return Buffer.concat([Buffer.from([(field << 3) | 2]), varint(bytes.length), bytes]);
}

function varint(n: number): Buffer {
  const out: number[] = [];
  let rest = n;
  while (rest >= 0x80) {
    out.push((rest & 0x7f) | 0x80);
    rest >>>= 7;
  }
  out.push(rest);
  return Buffer.from(out);
}

/** Every claim the provider may release; oidc-provider masks them by the granted scopes. */
export function claimsOf(sub: string, connectorId: string, identity: Identity): { sub: string; [claim: string]: unknown } {
  return {
    sub,
    name: identity.username,
    preferred_username: identity.preferredUsername ?? identity.username,
    ...(identity.email !== undefined ? { email: identity.email, email_verified: identity.emailVerified } : {}),
    // Dex leaves groups out when there are none.
    ...(identity.groups.length > 0 ? { groups: [...identity.groups] } : {}),
    federated_claims: { connector_id: connectorId, user_id: identity.userId },
  };
}

/** Scopes and the claims each releases (DESIGN §7). */
export const SCOPES = ['openid', 'profile', 'email', 'groups', 'offline_access', 'federated:id'] as const;
export const CLAIMS_BY_SCOPE = {
  openid: ['sub'],
  profile: ['name', 'preferred_username'],
  email: ['email', 'email_verified'],
  groups: ['groups'],
  'federated:id': ['federated_claims'],
} as const;
