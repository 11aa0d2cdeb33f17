/**
 * Revoked token ids (logout). Each revocation is a state-backend key `revoked-token:<jti>`
 * whose TTL is the token's remaining life, so the set cleans itself up; replicas sharing Redis
 * see it at once. Each replica also keeps the ids it revoked or heard of (pub/sub) in memory
 * until they expire: while Redis is unreachable that copy still answers, so a token logged out
 * on this replica stays dead. (Rejected: failing every authenticated request while Redis is
 * down; or trusting memory alone as Argo CD does, which misses revocations during a resync.)
 */
import type { Logger } from 'pino';
import { StateUnavailable, type StateBackend } from '../state/state.js';

export const REVOKED_PREFIX = 'revoked-token:';
export const REVOKED_CHANNEL = 'revoked-token';

export interface Revocation {
  /** Revokes until `exp` (seconds since the epoch); undefined: for good. */
  revoke(jti: string, exp: number | undefined): Promise<void>;
  isRevoked(jti: string): Promise<boolean>;
  close(): Promise<void>;
}

export interface RevocationDeps {
  readonly state: StateBackend;
  readonly log: Pick<Logger, 'warn' | 'info'>;
  readonly now: () => number;
}

export async function createRevocation({ state, log, now }: RevocationDeps): Promise<Revocation> {
  /** jti -> expiry in ms (Infinity: never). */
  const local = new Map<string, number>();
  /** Warn once per outage, not once per request. */
  let degraded = false;

  function remember(jti: string, untilMs: number): void {
    local.set(jti, untilMs);
    if (local.size % 1000 === 0) prune();
  }

  function prune(): void {
    const t = now();
    for (const [jti, until] of local) if (until <= t) local.delete(jti);
  }

  function locallyRevoked(jti: string): boolean {
    const until = local.get(jti);
    return until !== undefined && until > now();
  }

  const unsubscribe = await state
    .subscribe(REVOKED_CHANNEL, function heardRevocation(message) {
      const [jti, until] = splitMessage(message);
      if (jti !== '') remember(jti, until);
    })
    .catch((err: unknown) => {
      // Redis down at start: the key lookup still covers revocations made by other replicas.
      log.warn({ err }, 'revocation: cannot subscribe to revocations of other replicas yet');
      return undefined;
    });

  return {
    async revoke(jti, exp) {
      const untilMs = exp === undefined ? Number.POSITIVE_INFINITY : exp * 1000;
      const ttlMs = Math.ceil(untilMs - now());
      if (ttlMs <= 0) return;
      remember(jti, untilMs);
      const opts = Number.isFinite(ttlMs) ? { ttlMs } : {};
      // Not caught: a logout that could not be shared must say so rather than pretend.
      await state.set(`${REVOKED_PREFIX}${jti}`, '1', opts);
      await state.publish(REVOKED_CHANNEL, `${jti} ${untilMs}`).catch(() => undefined);
    },

    async isRevoked(jti) {
      if (locallyRevoked(jti)) return true;
      try {
        const revoked = (await state.get(`${REVOKED_PREFIX}${jti}`)) !== null;
        if (degraded) log.info('revocation: state backend reachable again');
        degraded = false;
        return revoked;
      } catch (err: unknown) {
        if (!(err instanceof StateUnavailable)) throw err;
        if (!degraded) log.warn('revocation: state backend unreachable; checking this replica\'s revocations only');
        degraded = true;
        return false;
      }
    },

    async close() {
      await unsubscribe?.();
    },
  };
}

function splitMessage(message: string): [string, number] {
  const space = message.lastIndexOf(' ');
  if (space <= 0) return [message, Number.POSITIVE_INFINITY];
  const until = Number(message.slice(space + 1));
  return [message.slice(0, space), Number.isFinite(until) ? until : Number.POSITIVE_INFINITY];
}
