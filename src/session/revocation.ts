/**
 * Revoked token ids (logout). Every replica keeps the whole revocation list in memory and
 * answers from it while that copy is known complete, so an authenticated request costs no
 * state round trip; docs/state.md ("Revocation list") records the design and its reasons.
 *
 * Storage: each revocation is a key `revoked-token:<jti>` whose TTL is the token's remaining
 * life (older replicas and the per-request fallback read it) AND a field of the hash
 * `revoked-tokens` (jti -> expiry in ms, 'Infinity' for never) so that a replica can load
 * the whole list in one call. Redis 7.0 has no per-field TTL: expired fields are removed
 * (HDEL) by whichever replica loads the list. Then the id is published to the other replicas.
 *
 * Complete means: subscribed (the backend's SubscriptionWatch said live) and the list loaded
 * after that. Memory: always (one process). Redis: lost synchronously when the subscriber
 * connection closes, complete again once it is resubscribed and the list reloaded, which
 * also picks up what was revoked meanwhile. The list is also reloaded every
 * RELOAD_INTERVAL_MS, so a revocation whose PUBLISH failed after its write stays unseen for
 * at most that long. While the copy is not complete, isRevoked() reads the key as before; if
 * that fails too, it answers from the ids this replica revoked or heard of (rejected: failing
 * every authenticated request while Redis is down; or trusting memory alone as Argo CD does,
 * which misses revocations during a resync).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { StateUnavailable, type StateBackend } from '../state/state.js';
import { createLogoutRefusals } from './logout-refusal.js';

export const REVOKED_PREFIX = 'revoked-token:';
export const REVOKED_CHANNEL = 'revoked-token';
/** The whole list, one call to load: field jti, value expiry in ms or 'Infinity'. */
export const REVOKED_HASH = 'revoked-tokens';
/**
 * The field of REVOKED_HASH that holds the marker of the record of revocations
 * (revocations-epoch.ts), not a revoked id: a jti is a UUID, never this name.
 */
export const MARKER_FIELD = 'revocations-epoch';
/** How often the list is reloaded while subscribed (a PUBLISH can fail after its write). */
export const RELOAD_INTERVAL_MS = 60_000;
/** How soon a failed load or subscribe is tried again. */
export const RETRY_MS = 1_000;

export const LOST_MESSAGE = 'revocation list: subscription lost; checking Redis per request until it is back';
export const COMPLETE_MESSAGE = 'revocation list: subscribed and loaded; answering from memory again';

export interface Revocation {
  /**
   * Revokes until `exp` (seconds since the epoch); undefined: for good. When the shared write
   * fails, rejects with Unavailable saying why (logout-refusal.ts); this replica refuses the token anyway.
   */
  revoke(jti: string, exp: number | undefined): Promise<void>;
  /** From this replica's copy while it is complete; otherwise asks the state backend. */
  isRevoked(jti: string): Promise<boolean>;
  /**
   * Synchronous answer from this replica's copy of the revocation list: true/false while the copy is
   * known complete (memory backend: always; Redis: subscription live and the list loaded after it),
   * undefined while it is not (Redis subscription down, reconnecting, or not loaded yet): then the
   * caller awaits isRevoked(), which asks the state backend as today. An id this replica knows
   * to be revoked is true even then (a revocation is never taken back).
   */
  revokedNow(jti: string): boolean | undefined;
  /**
   * Called with each id this replica learns is revoked: its own revocations, those heard from
   * other replicas and those found on a reload. So what a token keeps open (a relayed
   * WebSocket) can be cut when it is revoked, not only its next request refused.
   */
  onRevoked(listener: (jti: string) => void): () => void;
  /**
   * Whether the whole list has been loaded at least once since start. A process that started
   * while Redis was down has not: it knows no revocation of before it (revocations-epoch.ts).
   */
  loadedOnce(): boolean;
  close(): Promise<void>;
}

export interface RevocationDeps {
  readonly state: StateBackend;
  readonly log: Pick<Logger, 'warn' | 'info'>;
  readonly now: () => number;
  /** Where svc_logout_refusals_total is counted; none in tools that only read. */
  readonly registry?: Registry;
  /** Defaults to RELOAD_INTERVAL_MS; tests shorten it. */
  readonly reloadIntervalMs?: number;
}

export async function createRevocation(deps: RevocationDeps): Promise<Revocation> {
  const { state, log, now } = deps;
  const refusals = createLogoutRefusals(deps.registry !== undefined ? { registry: deps.registry } : {});
  /** jti -> expiry in ms (Infinity: never). */
  const local = new Map<string, number>();
  /** Warn once per outage of the per-request look-up, not once per request. */
  let degraded = false;
  /** The copy holds every revocation (subscribed, then loaded). */
  let complete = false;
  /** The subscription is live (its watch said so last). */
  let live = false;
  /** Bumped when the subscription is lost: a load begun before cannot make the copy complete. */
  let epoch = 0;
  /** A warning about the copy was logged: say so when it is complete again. */
  let warned = false;
  let closed = false;
  let unsubscribe: (() => Promise<void>) | undefined;
  /** The load started by the last onLive, awaited by the start. */
  let loading: Promise<void> | undefined;
  let retrying = false;
  let loaded = false;
  const listeners = new Set<(jti: string) => void>();

  function remember(jti: string, untilMs: number): void {
    const news = !local.has(jti);
    local.set(jti, untilMs);
    if (local.size % 1000 === 0) prune();
    if (news) tell(jti);
  }

  function tell(jti: string): void {
    for (const listener of listeners) {
      try {
        listener(jti);
      } catch (err: unknown) {
        log.warn({ err }, 'revocation: a listener failed');
      }
    }
  }

  function prune(): void {
    const t = now();
    for (const [jti, until] of local) if (until <= t) local.delete(jti);
  }

  function locallyRevoked(jti: string): boolean {
    const until = local.get(jti);
    return until !== undefined && until > now();
  }

  function becomeIncomplete(): void {
    if (!complete) return;
    complete = false;
    warned = true;
    log.warn(LOST_MESSAGE);
  }

  function becomeComplete(): void {
    if (complete) return;
    complete = true;
    if (warned) log.info(COMPLETE_MESSAGE);
    warned = false;
  }

  /** Loads the whole list into `local`; marks the copy complete if still subscribed. */
  async function load(): Promise<void> {
    const started = epoch;
    let all: Record<string, string>;
    try {
      all = await state.hashGetAll(REVOKED_HASH);
    } catch (err: unknown) {
      if (!(err instanceof StateUnavailable)) log.warn({ err }, 'revocation list: cannot load it');
      if (!complete) retryLoad();
      return;
    }
    const t = now();
    const expired: string[] = [];
    for (const [jti, value] of Object.entries(all)) {
      if (jti === MARKER_FIELD) continue;
      const until = parseExpiry(value);
      if (until <= t) expired.push(jti);
      else remember(jti, until);
    }
    prune();
    loaded = true;
    if (closed) return;
    if (started === epoch && live) becomeComplete();
    // Redis 7.0 has no per-field TTL: whoever loads the list removes what expired.
    if (expired.length > 0) await state.hashDelete(REVOKED_HASH, ...expired).catch(() => undefined);
  }

  /** A load failed while subscribed: try again soon rather than at the next periodic reload. */
  function retryLoad(): void {
    if (retrying || closed) return;
    retrying = true;
    void sleep(RETRY_MS, undefined, { ref: false }).then(() => {
      retrying = false;
      if (!closed && live && !complete) return load();
    });
  }

  const watch = {
    onLive() {
      live = true;
      loading = load();
    },
    onLost() {
      live = false;
      epoch++;
      becomeIncomplete();
    },
  };

  function heardRevocation(message: string): void {
    const [jti, until] = splitMessage(message);
    if (jti !== '') remember(jti, until);
  }

  /** Subscribes; when that fails (Redis down at start), tries again every RETRY_MS. */
  async function subscribe(first: boolean): Promise<void> {
    try {
      const off = await state.subscribe(REVOKED_CHANNEL, heardRevocation, watch);
      if (closed) await off();
      else unsubscribe = off;
    } catch (err: unknown) {
      if (first) {
        // The key look-up still covers revocations made by other replicas meanwhile.
        log.warn({ err }, 'revocation: cannot subscribe to revocations of other replicas yet; checking the state backend per request');
        warned = true;
      }
      if (closed) return;
      void sleep(RETRY_MS, undefined, { ref: false }).then(() => (closed ? undefined : subscribe(false)));
    }
  }

  await subscribe(true);
  await loading;

  const reload = setInterval(function reloadRevocations() {
    prune();
    if (live) void load();
  }, deps.reloadIntervalMs ?? RELOAD_INTERVAL_MS);
  reload.unref();

  function revokedNow(jti: string): boolean | undefined {
    if (locallyRevoked(jti)) return true;
    return complete ? false : undefined;
  }

  return {
    async revoke(jti, exp) {
      const untilMs = exp === undefined ? Number.POSITIVE_INFINITY : exp * 1000;
      const ttlMs = Math.ceil(untilMs - now());
      if (ttlMs <= 0) return;
      // Local first, then the shared list, then the message: a replica that loads the list
      // between the write and the PUBLISH already finds it there.
      remember(jti, untilMs);
      const opts = Number.isFinite(ttlMs) ? { ttlMs } : {};
      // A logout that could not be shared must say so rather than pretend, and say why.
      // Replicated: on Sentinel and Cluster a logout answered with success survives a failover
      // (docs/state.md, "What a failover may lose").
      try {
        await Promise.all([
          state.set(`${REVOKED_PREFIX}${jti}`, '1', { ...opts, replicated: true }),
          state.hashSet(REVOKED_HASH, jti, String(untilMs), { replicated: true }),
        ]);
      } catch (err: unknown) {
        throw refusals.explain(err);
      }
      await state.publish(REVOKED_CHANNEL, `${jti} ${untilMs}`).catch(() => undefined);
    },

    revokedNow,

    loadedOnce: () => loaded,

    onRevoked(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },

    async isRevoked(jti) {
      const known = revokedNow(jti);
      if (known !== undefined) return known;
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
      if (closed) return;
      closed = true;
      complete = false;
      clearInterval(reload);
      await unsubscribe?.();
    },
  };
}

/** A hash value: expiry in ms; 'Infinity' (or anything unreadable, to stay on the safe side): never. */
function parseExpiry(value: string): number {
  const until = Number(value);
  return Number.isNaN(until) ? Number.POSITIVE_INFINITY : until;
}

function splitMessage(message: string): [string, number] {
  const space = message.lastIndexOf(' ');
  if (space <= 0) return [message, Number.POSITIVE_INFINITY];
  const until = Number(message.slice(space + 1));
  return [message.slice(0, space), Number.isFinite(until) ? until : Number.POSITIVE_INFINITY];
}
