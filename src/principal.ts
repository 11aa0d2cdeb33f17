/**
 * Who is calling, once a token has been verified, and which RBAC subjects that gives. Knows
 * nothing of HTTP.
 *
 * A name from outside (an SSO `sub` or group) shares the rights namespace with local accounts and
 * roles, so that Argo CD-style lines (`g, <group>, role:x`, `p, <sub>, ...`) keep working. It must
 * never be taken for one of them: an external name that starts with a reserved prefix (`role:`,
 * `workload:`) or equals a local account's name is reserved, and never becomes a subject. This
 * file is the one place that rule lives (docs/rbac.md "SSO users and groups").
 */
import { ADMIN } from './accounts/config.js';

export interface Principal {
  /** Local account name, the SSO `sub`, or `workload:<issuer entry>:<subject>` (built by svc, src/workload/). */
  readonly username: string;
  /**
   * For people to read (the account page, userinfo, the log, a header to backends): an SSO
   * user's `preferred_username`, `email` or `name`. Never a rights subject: `username` is.
   * Undefined when the token has none of them, and for local accounts (their name is readable).
   */
  readonly displayName?: string;
  readonly groups: readonly string[];
  /**
   * `sso`: the provider's `sub`, the person's id there (src/person.ts), when oidc.config's claim
   * mappings gave another `username`: the mapped name is the rights subject and the name, never
   * the person (issue 54). Absent: `username` is the `sub`.
   */
  readonly subject?: string;
  /**
   * `svc` for local tokens, the provider's issuer for SSO tokens and SSO users' personal API
   * tokens, the workload issuer's URL for workload tokens.
   */
  readonly issuer: string;
  /** `ssoApiKey`: an SSO user's personal API token (src/ssotokens/); its names follow the SSO rule below. */
  readonly kind: 'session' | 'apiKey' | 'sso' | 'ssoApiKey' | 'workload';
  /** The token's `jti`: revocation, open relays and caches are keyed on it. */
  readonly tokenId: string;
  /**
   * API tokens (`apiKey`, `ssoApiKey`): the id `svc account get` and `token-created` show, which
   * the audit trail records as `svc.tokenId` (http/audit-caller.ts). Not the jti, which is
   * random per token and shown nowhere.
   */
  readonly apiTokenId?: string;
  /**
   * `sso`: the provider's session id (`sid`) of the ID token, when it has one; recorded with a
   * session first seen in use (the CLI's), so that ending it reaches the provider session and grant.
   */
  readonly sid?: string;
  /** Seconds since the epoch; undefined for API tokens without expiry. */
  readonly expiresAt: number | undefined;
  /**
   * The token's `iat`, seconds since the epoch; undefined when it has none. A session token
   * (`session`, `sso`) issued before the record of revocations was lost is refused
   * (session/revocations-epoch.ts), and one without it too.
   */
  readonly issuedAt?: number;
  /**
   * A local session of an account without a second factor while `users.mfa.required` is on:
   * it may call only the routes declared for it (http/route-access.ts) and no extension (extensions/access.ts).
   */
  readonly enrolmentOnly?: true;
}

/** The readable name of an ID token's claims, in the CLI's order: preferred_username, email, name. */
export function readableNameOf(claims: Readonly<Record<string, unknown>>): string | undefined {
  for (const key of ['preferred_username', 'email', 'name']) {
    const value = claims[key];
    if (typeof value === 'string' && value.trim() !== '') return value.trim();
  }
  return undefined;
}

/** What people read for a principal: its readable name, else its username. */
export function shownName(principal: Principal): string {
  return principal.displayName ?? principal.username;
}

/** Prefixes only svc gives names: roles (`role:admin`) and workloads (`workload:<issuer>:<subject>`). */
export const RESERVED_PREFIXES: readonly string[] = ['role:', 'workload:'];

/**
 * The local accounts a check compares with (svc's account map, or a Set of names). Account names
 * are lower-case by rule; `admin` is reserved even when it is turned off.
 */
export interface LocalAccountNames {
  has(name: string): boolean;
}

/**
 * Why an external name may not be an RBAC subject, or undefined when it may. Compared trimmed and
 * lower-cased, so ` Role:admin` or `ADMIN` do not slip through (account names are lower-case).
 */
export function reservedExternalName(name: string, localAccountNames: LocalAccountNames): string | undefined {
  const folded = name.trim().toLowerCase();
  const prefix = RESERVED_PREFIXES.find((p) => folded.startsWith(p));
  if (prefix !== undefined) return `names starting with '${prefix}' are reserved for svc's own ${prefix === 'role:' ? 'roles' : 'workload identities'}`;
  if (folded === ADMIN) return `it is the name of the built-in local account '${ADMIN}'`;
  if (localAccountNames.has(folded)) return `it is the name of the local account '${folded}'`;
  return undefined;
}

/** An external name left out of a principal's subjects, and why. */
export interface DroppedName {
  readonly name: string;
  readonly as: 'sub' | 'group';
  readonly reason: string;
}

/**
 * The RBAC subjects of a principal: the user, then each of its groups. A local principal's name is
 * its account's; an SSO principal's `sub` and groups are kept as written unless reserved, and a
 * reserved one is left out (and passed to `dropped`), so the request is granted less, never more.
 * The accounts are read at each check: an account added after a login takes effect at once.
 */
export function rbacSubjectsOf(principal: Principal, localAccountNames: LocalAccountNames, dropped?: (name: DroppedName) => void): readonly string[] {
  if (principal.kind === 'session' || principal.kind === 'apiKey') return [principal.username, ...principal.groups];
  const subjects: string[] = [];
  const consider = (name: string, as: DroppedName['as']): void => {
    const reason = reservedExternalName(name, localAccountNames);
    if (reason === undefined) subjects.push(name);
    else dropped?.({ name, as, reason });
  };
  // A workload's username is built by svc (workload:<entry>:<subject>); only its groups come from outside.
  if (principal.kind === 'workload') subjects.push(principal.username);
  else consider(principal.username, 'sub');
  for (const group of principal.groups) consider(group, 'group');
  return subjects;
}
