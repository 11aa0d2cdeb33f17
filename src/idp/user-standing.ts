/**
 * Whether the user behind a token of the bundled provider is still vouched for by the directory,
 * as token introspection answers it (RFC 7662 `active`, ./token-introspection.ts), and the groups
 * of the last check. The provider's tokens are opaque records that live a day (access) or months
 * (refresh); a user deleted upstream would otherwise stay `active` until they expire.
 *
 * The check is the one svc's SSO sessions get (oidc/refresh.ts through the refresh grant): the
 * connector is asked again (`refresh`) at most once per `users.sso.groupsRecheck` per user,
 * counted from the token's issue (a login or a refresh asked the connector then) or the last
 * check, whichever is later. The verdict is kept in the state backend (`idp:standing:<sub>`), so
 * that every replica answers alike and a check on one spares the others a question:
 * - refused (the connector answers null: user deleted, no longer in the allowed groups): every
 *   token issued before that check is inactive; one issued later came from a login the connector
 *   accepted again;
 * - confirmed: the fresh identity (its groups) is written to the user's record, as a refresh does;
 * - the connector cannot answer (directory down): the verdict of the last check stands for at most
 *   UPSTREAM_DOWN_GRACE_MS after it (SSO sessions' grace), then the token is inactive until the
 *   directory answers; a new try at most every RETRY_MS per user and replica, with a log line.
 * A user the provider has no record of, or whose connector is gone from idp.config, is inactive.
 * A connector that cannot check a user again (no `refresh`) leaves the token as its login left it.
 *
 * The refresh grant's own checks are recorded here too (provider.ts): a refusal there makes the
 * user's other tokens inactive at once.
 */
import type { Logger } from 'pino';
import type { Identity } from '../../connectors/connector.js';
import { refusesUser, upstreamReason } from '../../connectors/errors.js';
import { BoundedCache } from '../lib/bounded-cache.js';
import { describeFailure } from '../lib/tls-fetch.js';
import type { StateBackend } from '../state/state.js';
import type { ConnectorSource } from './connectors/connector-source.js';
import { REFRESH_TOKEN_TTL_S } from './lifetimes.js';
import type { AccountStore, StoredAccount } from './storage/federated-accounts.js';

/** As personal API tokens' recheck (src/ssotokens/recheck.ts). */
export const UPSTREAM_DOWN_GRACE_MS = 15 * 60_000;
export const RETRY_MS = 30_000;
/** As the refresh grant's: long enough for a slow directory, bounded. */
const CHECK_TIMEOUT_MS = 15_000;
const USERS_REMEMBERED = 10_000;

const standingKey = (sub: string): string => `idp:standing:${sub}`;

/** The last check's verdict, as stored. */
interface Verdict {
  readonly checkedAt: number;
  readonly refused: boolean;
}

export type Standing =
  | { readonly active: true; readonly groups: readonly string[] }
  | { readonly active: false; readonly reason: string };

export interface UserStandingDeps {
  readonly state: Pick<StateBackend, 'get' | 'set'>;
  readonly accounts: AccountStore;
  readonly connectors: ConnectorSource;
  /** `users.sso.groupsRecheck` in ms. */
  readonly recheckMs: () => number;
  readonly now: () => number;
  /** The connectors' callback URL (`<issuer>/callback`), which a refresh may need. */
  readonly callbackUrl: string;
  readonly log: Pick<Logger, 'info' | 'warn'>;
}

export interface UserStanding {
  /** The standing of `sub` for a token issued at `issuedAtMs`, checking the connector when due. */
  check(sub: string, issuedAtMs: number): Promise<Standing>;
  /** A check made elsewhere (the refresh grant): `refused` when the connector no longer has the user. */
  record(sub: string, refused: boolean): Promise<void>;
}

export function createUserStanding(deps: UserStandingDeps): UserStanding {
  /** Per user: no new try at a failing connector before this (ms); per replica. */
  const retryAt = new BoundedCache<string, number>(USERS_REMEMBERED);
  /** One question to the connector per user at a time, whatever the number of introspections. */
  const inFlight = new Map<string, Promise<Identity | null | Error>>();

  async function read(sub: string): Promise<Verdict | undefined> {
    const text = await deps.state.get(standingKey(sub));
    if (text === null) return undefined;
    try {
      const value = JSON.parse(text) as Partial<Verdict>;
      if (typeof value.checkedAt === 'number' && typeof value.refused === 'boolean') return { checkedAt: value.checkedAt, refused: value.refused };
    } catch {
      // Not ours: as if never checked, which asks the connector again.
    }
    return undefined;
  }

  async function record(sub: string, refused: boolean): Promise<void> {
    const verdict: Verdict = { checkedAt: deps.now(), refused };
    // As long as any token of the user may live.
    await deps.state.set(standingKey(sub), JSON.stringify(verdict), { ttlMs: REFRESH_TOKEN_TTL_S * 1000 });
  }

  function ask(account: StoredAccount, sub: string): Promise<Identity | null | Error> {
    const running = inFlight.get(sub);
    if (running !== undefined) return running;
    const asked = askConnector(deps, account).finally(() => inFlight.delete(sub));
    inFlight.set(sub, asked);
    return asked;
  }

  return {
    record,
    async check(sub, issuedAtMs) {
      const account = await deps.accounts.find(sub);
      if (account === undefined) return { active: false, reason: 'the provider holds no record of the user' };
      const connector = deps.connectors.get(account.connectorId);
      if (connector === undefined) return { active: false, reason: `connector '${account.connectorId}' is no longer configured` };
      const verdict = await read(sub);
      if (verdict?.refused === true && verdict.checkedAt >= issuedAtMs) return { active: false, reason: 'the directory no longer has the user (last check)' };
      if (connector.refresh === undefined) return { active: true, groups: account.identity.groups };
      // A refusal before the token was issued was overcome by the login that issued it.
      const lastConfirmed = Math.max(issuedAtMs, verdict?.refused === false ? verdict.checkedAt : 0);
      const now = deps.now();
      if (now - lastConfirmed < deps.recheckMs()) return { active: true, groups: account.identity.groups };
      if ((retryAt.get(sub) ?? 0) > now) return standsOnLast(lastConfirmed, now, account);
      const fresh = await ask(account, sub);
      if (fresh === null) {
        await record(sub, true);
        deps.log.info({ connector: account.connectorId }, 'identity provider: the connector no longer has the user behind a token; its tokens are inactive');
        return { active: false, reason: 'the directory no longer has the user' };
      }
      if (fresh instanceof Error) {
        retryAt.set(sub, now + RETRY_MS);
        deps.log.warn({ connector: account.connectorId, reason: upstreamReason(fresh) ?? describeFailure(fresh) }, 'identity provider: checking the user behind a token at its connector failed; the last check stands within its grace');
        return standsOnLast(lastConfirmed, now, account);
      }
      await record(sub, false);
      await deps.accounts.update(sub, account, { connectorId: account.connectorId, identity: fresh }, REFRESH_TOKEN_TTL_S);
      return { active: true, groups: fresh.groups };
    },
  };
}

/** The directory cannot answer: the last confirmed check stands within the grace, never after. */
function standsOnLast(lastConfirmed: number, now: number, account: StoredAccount): Standing {
  if (now - lastConfirmed <= UPSTREAM_DOWN_GRACE_MS) return { active: true, groups: account.identity.groups };
  return { active: false, reason: 'the directory cannot be reached and the last check of the user is past its grace' };
}

/** The connector's view now: null when it refuses the user, the failure when it cannot answer. */
async function askConnector(deps: UserStandingDeps, account: StoredAccount): Promise<Identity | null | Error> {
  const connector = deps.connectors.get(account.connectorId);
  if (connector?.refresh === undefined) return null;
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')), CHECK_TIMEOUT_MS);
  try {
    return await connector.refresh(account.identity, { callbackUrl: deps.callbackUrl, wantGroups: true, signal: deadline.signal });
  } catch (err: unknown) {
    if (refusesUser(err)) return null;
    return err instanceof Error ? err : new Error(String(err));
  } finally {
    clearTimeout(timer);
  }
}
