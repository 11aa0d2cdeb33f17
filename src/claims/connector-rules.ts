/**
 * The claim rules of a connector's `config`, applied wherever the connector hands out an
 * identity: a password login, a browser login's completion, and a refresh (the refresh grant,
 * the personal API tokens' recheck). idp.config parsing (src/idp/connectors/config.ts) wraps
 * every connector's factory with this, whatever its type, so a connector type has no code of
 * its own for the rules: it only puts what its source said in `Identity.claims`.
 *
 * The wrapper is a Proxy that replaces `login`, `begin`, `complete` and `refresh` and passes every
 * other member through: rejected, a hand-written object listing the contract's members, which would
 * silently drop a member the contract gains later (metadata, logoutTokens, ...).
 *
 * A connector with rules is always asked for groups (`wantGroups: true`), whatever the scope of
 * the authorization request: the rules decide on the groups the source has, and the scope only
 * decides what the token carries (src/idp/claims.ts). Otherwise a client that leaves `groups`
 * out of its scope would hand a rule on groups an empty list, and pass it (issue 54).
 */
import type { Connector, ConnectorDeps, ConnectorFactory, Identity, LoginContext } from '../../connectors/connector.js';
import { applyClaimRules, isClaimRuleRefused, type RuleUser } from './evaluate.js';
import { hasClaimRules, type ClaimRules } from './rules-config.js';

/** What `claims` holds for a connector that gives none of its own: the identity's fields, under the names of the provider's claims. */
export function claimsOfIdentity(identity: Identity): Record<string, unknown> {
  return {
    sub: identity.userId,
    name: identity.username,
    preferred_username: identity.preferredUsername ?? identity.username,
    ...(identity.email !== undefined ? { email: identity.email } : {}),
    email_verified: identity.emailVerified,
    groups: [...identity.groups],
  };
}

/** The identity after the rules, without its `claims` (they are not kept with the account). Throws ClaimRuleRefused. */
export function identityUnderRules(rules: ClaimRules, identity: Identity): Identity {
  const { claims, ...rest } = identity;
  if (!hasClaimRules(rules)) return rest;
  const user: RuleUser = {
    uid: identity.userId,
    username: identity.preferredUsername ?? identity.username,
    email: identity.email,
    name: identity.username,
    groups: identity.groups,
  };
  const mapped = applyClaimRules(rules, claims ?? claimsOfIdentity(identity), user);
  const { email: _email, ...withoutEmail } = rest;
  const map = rules.claimMappings;
  return {
    ...(map.email === undefined ? rest : withoutEmail),
    // The provider's `preferred_username` is the login name, its `name` the person's (Dex's Username).
    ...(map.username !== undefined ? { preferredUsername: mapped.username } : {}),
    ...(map.name !== undefined && mapped.name !== undefined ? { username: mapped.name } : {}),
    ...(map.email !== undefined && mapped.email !== undefined
      ? { email: mapped.email, emailVerified: identity.emailVerified && mapped.email === identity.email }
      : map.email !== undefined ? { emailVerified: false } : {}),
    ...(map.groups !== undefined ? { groups: mapped.groups } : {}),
  };
}

/** `open` whose connectors hand out identities under `rules`. */
export function withClaimRules(open: ConnectorFactory, rules: ClaimRules): ConnectorFactory {
  return (deps: ConnectorDeps) => underRules(open(deps), rules, deps);
}

type Method = (...args: never[]) => Promise<Identity | null>;

/** The arguments with the LoginContext (every method's last) asking for groups. */
function askingForGroups(args: readonly unknown[]): never[] {
  const last = args.at(-1);
  if (typeof last !== 'object' || last === null || !('wantGroups' in last)) return args as never[];
  return [...args.slice(0, -1), { ...(last as LoginContext), wantGroups: true }] as never[];
}

function underRules(connector: Connector, rules: ClaimRules, deps: ConnectorDeps): Connector {
  const login = (method: Method) => async (...args: never[]): Promise<Identity | null> => {
    const identity = await method.apply(connector, askingForGroups(args));
    return identity === null ? null : identityUnderRules(rules, identity);
  };
  const begin = (method: (...args: never[]) => unknown) => (...args: never[]): unknown => method.apply(connector, askingForGroups(args));
  const refresh = (method: Method) => async (identity: Identity, ctx: LoginContext): Promise<Identity | null> => {
    const fresh = await (method as (identity: Identity, ctx: LoginContext) => Promise<Identity | null>).call(connector, identity, { ...ctx, wantGroups: true });
    if (fresh === null) return null;
    // The identity the rules made at login, handed back with nothing new read (an oidc upstream
    // that sends no ID token on refresh): mapping it again would map the mapped values.
    if (fresh.claims === undefined && sameUser(fresh, identity)) return fresh;
    try {
      return identityUnderRules(rules, fresh);
    } catch (err: unknown) {
      if (!isClaimRuleRefused(err)) throw err;
      // No longer let in: a refusal of the user, as a connector's own null is.
      deps.log.info({ reason: err.reason, user: fresh.userId }, 'identity provider: the claim rules refused a refreshed identity');
      return null;
    }
  };
  return new Proxy(connector, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      if (property === 'login' || property === 'complete') return login(value as Method);
      if (property === 'begin') return begin(value as (...args: never[]) => unknown);
      if (property === 'refresh') return refresh(value as Method);
      return (value as (...args: unknown[]) => unknown).bind(target);
    },
  });
}

/** The same user with the same fields (connectorData aside). */
function sameUser(a: Identity, b: Identity): boolean {
  return a.userId === b.userId && a.username === b.username && a.preferredUsername === b.preferredUsername && a.email === b.email
    && a.emailVerified === b.emailVerified && a.groups.length === b.groups.length && a.groups.every((g, i) => g === b.groups[i]);
}
