/**
 * Whether an SSO user behind personal API tokens is still vouched for upstream, and with which
 * groups: read again from the connector (LDAP: the user and its groups) at most once per
 * `users.sso.groupsRecheck` per user, never per request. The answer is kept in memory for the
 * proxy's synchronous path and in the state backend, so that replicas share one check.
 *
 * Three outcomes:
 * - confirmed: the groups now (the verifier intersects them with the token's own);
 * - refused (the connector answers null: user deleted, renamed): `onRefused` deletes the user's
 *   tokens everywhere, and the request is refused;
 * - the upstream cannot answer (directory down, timeout): the user keeps the groups of the last
 *   confirmed check, never more, for at most UPSTREAM_DOWN_GRACE_MS after it, with a new try at
 *   most every RETRY_MS and a log line each time; past the grace, requests are refused with 503
 *   until the upstream answers. Refusing everything at the first failed check would turn a
 *   directory blip into an outage of every automation; granting without end would let a user
 *   removed during an outage keep working. Making a new token always needs a check that answers.
 */
import type { Logger } from 'pino';
import type { Identity } from '../../connectors/connector.js';
import { upstreamReason } from '../../connectors/errors.js';
import { Unauthenticated, Unavailable } from '../errors.js';
import { BoundedCache } from '../lib/bounded-cache.js';
import type { Sealer } from '../lib/sealed.js';
import { describeFailure } from '../lib/tls-fetch.js';
import type { StateBackend } from '../state/state.js';
import { recordKeyOf } from './records.js';
import { createSharedChecks, type Confirmed } from './shared-checks.js';

export type { Confirmed };

export const UPSTREAM_DOWN_GRACE_MS = 15 * 60_000;
export const RETRY_MS = 30_000;
const USERS_REMEMBERED = 10_000;

/** What the bundled identity provider offers: the identity it holds, and its connector's fresh view. */
export interface IdentitySource {
  /** The identity behind `sub` as the provider holds it now (its login record). */
  find(sub: string): Promise<{ readonly connectorId: string; readonly identity: Identity } | undefined>;
  /** The connector's view now: null when it refuses the user; throws when it cannot answer. */
  refresh(connectorId: string, identity: Identity): Promise<Identity | null>;
}

/** The user as the recheck needs it: its stable id, readable name, connector and sealed identity. */
export interface CheckedUser {
  readonly sub: string;
  readonly name: string;
  readonly connectorId: string;
  readonly identity: string;
}

export interface RecheckDeps {
  readonly source: IdentitySource;
  readonly state: StateBackend;
  /** Sealer of purpose 'sso-token-identity': the identity in svc-secret and the shared check. */
  readonly sealer: () => Sealer;
  readonly everyMs: () => number;
  /** The upstream refused the user: delete its tokens, record why. */
  readonly onRefused: (user: CheckedUser, reason: string) => Promise<void>;
  readonly log: Pick<Logger, 'info' | 'warn'>;
  readonly now: () => number;
}

export interface Recheck {
  /** The check in force without waiting, or undefined when one is due. */
  fresh(user: CheckedUser): Confirmed | undefined;
  /** The check in force, made now when due; throws Unauthenticated (refused) or Unavailable (down past the grace). */
  current(user: CheckedUser): Promise<Confirmed>;
  /** A check now whatever the interval, for a new token: any failure refuses. */
  confirmNow(user: CheckedUser, identity: Identity): Promise<Confirmed>;
}

interface Held extends Confirmed {
  /** While the upstream fails: no new try before this (ms). */
  readonly retryAt?: number;
  /** The upstream refused the user: refused here too until a new token's check confirms it. */
  readonly refused?: string;
}

export function createRecheck(deps: RecheckDeps): Recheck {
  const held = new BoundedCache<string, Held>(USERS_REMEMBERED);
  const inFlight = new Map<string, Promise<Confirmed>>();

  function fresh(user: CheckedUser): Confirmed | undefined {
    const hit = held.get(user.sub);
    if (hit === undefined || hit.refused !== undefined) return undefined;
    const now = deps.now();
    if (now - hit.checkedAt < deps.everyMs()) return hit;
    // Upstream down, retried recently, still within the grace: the last confirmed groups hold.
    if (hit.retryAt !== undefined && now < hit.retryAt && now - hit.checkedAt < UPSTREAM_DOWN_GRACE_MS) return hit;
    return undefined;
  }

  const sharedChecks = createSharedChecks(deps.state, deps.sealer, deps.log);

  async function remember(user: CheckedUser, confirmed: Confirmed): Promise<Confirmed> {
    held.set(user.sub, confirmed);
    await sharedChecks.write(user.sub, confirmed, UPSTREAM_DOWN_GRACE_MS);
    return confirmed;
  }

  function openIdentity(user: CheckedUser): Identity {
    const text = deps.sealer().open(user.identity, recordKeyOf(user.sub));
    if (text === undefined) throw new Unauthenticated(`the identity kept for '${user.name}' cannot be opened (server.secretkey changed since the token was made); make a new token`);
    return JSON.parse(text) as Identity;
  }

  /** The connector's answer: confirmed, or a throw (refused: its tokens are deleted first). */
  async function ask(user: CheckedUser, identity: Identity): Promise<Confirmed> {
    const fresh = await deps.source.refresh(user.connectorId, identity);
    if (fresh === null) {
      const reason = `connector '${user.connectorId}' no longer knows the user`;
      deps.log.info({ sub: user.sub, name: user.name, connector: user.connectorId }, `personal API tokens: ${reason}; the user's tokens are deleted`);
      const message = `'${user.name}' is refused: ${reason}; their personal API tokens were deleted`;
      held.set(user.sub, { groups: [], checkedAt: deps.now(), refused: message });
      await deps.onRefused(user, reason);
      throw new Unauthenticated(message);
    }
    return remember(user, { groups: fresh.groups, checkedAt: deps.now() });
  }

  async function check(user: CheckedUser): Promise<Confirmed> {
    const now = deps.now();
    const other = await sharedChecks.read(user.sub);
    if (other !== undefined && now - other.checkedAt < deps.everyMs()) {
      held.set(user.sub, other);
      return other;
    }
    const identity = openIdentity(user);
    try {
      return await ask(user, identity);
    } catch (err: unknown) {
      if (err instanceof Unauthenticated) throw err;
      return upstreamDown(user, err, [held.get(user.sub), other]);
    }
  }

  function upstreamDown(user: CheckedUser, err: unknown, known: readonly (Confirmed | undefined)[]): Confirmed {
    const now = deps.now();
    const last = known.filter((c): c is Confirmed => c !== undefined).sort((a, b) => b.checkedAt - a.checkedAt)[0];
    const reason = upstreamReason(err) ?? describeFailure(err);
    if (last !== undefined && now - last.checkedAt < UPSTREAM_DOWN_GRACE_MS) {
      deps.log.warn({ sub: user.sub, name: user.name, connector: user.connectorId, reason, confirmedAt: new Date(last.checkedAt).toISOString() },
        'personal API tokens: the connector cannot recheck the user now; the groups of the last confirmed check hold for now (never more)');
      held.set(user.sub, { groups: last.groups, checkedAt: last.checkedAt, retryAt: now + Math.min(RETRY_MS, deps.everyMs()) });
      return last;
    }
    deps.log.warn({ sub: user.sub, name: user.name, connector: user.connectorId, reason },
      'personal API tokens: the connector cannot recheck the user and no check confirmed them recently; their tokens are refused until it answers');
    throw new Unavailable(`the source of '${user.name}' (connector '${user.connectorId}') cannot be reached to confirm them; their personal API tokens work again once it answers`, { cause: err });
  }

  return {
    fresh,
    current(user) {
      const hit = fresh(user);
      if (hit !== undefined) return Promise.resolve(hit);
      const refused = held.get(user.sub)?.refused;
      if (refused !== undefined) return Promise.reject(new Unauthenticated(refused));
      let pending = inFlight.get(user.sub);
      if (pending === undefined) {
        pending = check(user).finally(() => inFlight.delete(user.sub));
        inFlight.set(user.sub, pending);
      }
      return pending;
    },
    async confirmNow(user, identity) {
      try {
        return await ask(user, identity);
      } catch (err: unknown) {
        if (err instanceof Unauthenticated) throw err;
        deps.log.warn({ sub: user.sub, connector: user.connectorId, reason: upstreamReason(err) ?? describeFailure(err) }, 'personal API tokens: no token is made while the connector cannot confirm the user');
        throw new Unavailable(`the source of '${user.name}' (connector '${user.connectorId}') cannot be reached to confirm your groups; no token was made, try again later`, { cause: err });
      }
    },
  };
}
