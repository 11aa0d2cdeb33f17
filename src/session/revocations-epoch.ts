/**
 * A token refused once stays refused, whatever state is lost (issue 52). The revocation list
 * (revocation.ts) lives in the state backend: memory state loses it at every start, Redis when
 * it loses its data (FLUSHALL, a restart without persistence, an eviction). A logged-out token
 * would then work again. So the state backend also holds a marker, the field MARKER_FIELD of
 * the revocation list's own hash (REVOKED_HASH) = `<random id> <ms>`, written when the record
 * of revocations begins (the first start, or the first look after a loss). Its absence means
 * "revocations may have been lost": this replica writes a new marker with the present as its
 * time (on Redis, Redis's own clock, TIME: not the writing replica's), and every token whose revocation lives in
 * state alone (CUTOFF_KINDS: svc's `session`, `sso`, and `workload` tokens) issued before the
 * marker's time is refused ('the record of revocations was lost at <time>; log in again'). That
 * is fail closed: people log in again, workloads exchange again. API tokens (svc's and SSO
 * users' personal ones) live in the config store and are not affected: a logout with one
 * deletes its record there (logout.ts), so no revocation of one lives in state alone.
 *
 * The marker is a field of the list's hash, not a key of its own: the two are lost together or
 * not at all (an eviction, a DEL, a Cluster node's loss of the hash takes the marker with it). A
 * marker in a key of its own survived an eviction of the list alone and brought logged-out
 * tokens back (issue 52, review). The hash has no TTL; expired revocations are HDEL'd by field.
 *
 * When it is read: at start, each time the subscription to REVOCATIONS_EPOCH_CHANNEL becomes
 * live (a Redis that restarted comes back through a new connection), and every
 * CHECK_INTERVAL_MS (FLUSHALL keeps the connection). A new marker is published, so the other
 * replicas adopt it at once; any replica that reads a marker with another id and a later time
 * adopts it (HSETNX: of replicas that find it absent together, one writes, the others read
 * its marker). A marker whose time is more than the clock margin ahead of this replica's clock
 * is adopted with this replica's present instead, and said: a replica with a clock ahead must
 * not refuse everyone's logins until its own time. A cutoff only moves forward. The check per token is a comparison with the copy
 * held here: no round trip per request.
 *
 * Until this process has read the marker and loaded the revocation list once (a replica or a
 * respawned worker that starts while Redis is down knows neither), it refuses every such token
 * issued before this process started, and says so once: a revoked one could be among them.
 * Tokens issued by this process since are kept, so people log in again here and carry on.
 *
 * Rejected: a durable place for revocations (a file per replica is not shared, the config store
 * is the operator's); refusing every token while the marker cannot be read (people could not
 * even log in again); trusting the other replicas' clocks to the millisecond (CLOCK_SKEW_MS).
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Principal } from '../principal.js';
import { StateUnavailable, type StateBackend } from '../state/state.js';
import { MARKER_FIELD, RETRY_MS, REVOKED_HASH } from './revocation.js';

/** The marker's name in the log and the docs: a field of the revocation list's hash. */
const MARKER_NAME = MARKER_FIELD;
export const REVOCATIONS_EPOCH_CHANNEL = 'revocations-epoch';
/** How often the marker is read while the connection stays up (FLUSHALL does not drop it). */
export const CHECK_INTERVAL_MS = 5_000;

export const LOST_METRIC = 'svc_state_revocations_lost_total';
export const NOT_BEFORE_METRIC = 'svc_session_tokens_not_before_seconds';

/**
 * The kinds of token whose revocation lives in the state backend alone (a logout revokes their
 * jti there): the ones a lost revocation list could bring back. Workload tokens are short-lived
 * and got again by exchange, so they are refused like sessions rather than made irrevocable.
 */
export const CUTOFF_KINDS: ReadonlySet<Principal['kind']> = new Set(['session', 'sso', 'workload']);

/**
 * How far another replica's clock may run ahead of the one that wrote the marker. A token that
 * replica issued just before the loss carries an `iat` up to this much after the marker's time,
 * so tokens issued up to this long after it are refused too (fail closed: a later login is
 * refused and made again; the other way, a token of before the loss, maybe revoked, would be
 * kept). Not applied with memory state: one process, one clock. Keep replicas' clocks in sync
 * (NTP) well within it.
 */
export const CLOCK_SKEW_MS = 2_000;

export interface Marker {
  readonly id: string;
  /** Milliseconds since the epoch: session tokens issued before are refused. */
  readonly atMs: number;
}

export interface RevocationsEpoch {
  /** The marker's time (ms); undefined while the marker has not been read since start. */
  notBefore(): number | undefined;
  /** Why this token is refused, or undefined: synchronous, a comparison on the copy held here. */
  refusal(principal: Pick<Principal, 'kind' | 'issuedAt'>): string | undefined;
  /** Reads the marker now (and writes a new one when it is gone). */
  check(): Promise<void>;
  /** Called each time the cutoff moves forward after start, so what a token keeps open (a relayed WebSocket) is checked again. */
  onMoved(listener: () => void): () => void;
  close(): Promise<void>;
}

export interface RevocationsEpochDeps {
  readonly state: StateBackend;
  readonly log: Pick<Logger, 'warn' | 'info'>;
  readonly now: () => number;
  readonly registry?: Registry;
  /** Defaults to CHECK_INTERVAL_MS; tests shorten it. */
  readonly checkIntervalMs?: number;
  /**
   * When this process began (ms; default: now() less its uptime). Memory state is born with the
   * process, so its record of revocations begins then: whatever the previous process knew was
   * lost before this one started, and a token of the previous process is always older.
   */
  readonly processStartMs?: number;
  /**
   * Whether the revocation list has been loaded once since start (revocation.ts loadedOnce).
   * Until it has, and the marker has been read, tokens of before this process are refused.
   * Absent: as loaded (tests of the marker alone).
   */
  readonly listLoaded?: () => boolean;
  /** Defaults to CLOCK_SKEW_MS with a shared backend, 0 with memory state; tests shorten it. */
  readonly clockSkewMs?: number;
}

export function formatMarker(marker: Marker): string {
  return `${marker.id} ${String(marker.atMs)}`;
}

/** undefined for anything this release would not write: treated as lost (fail closed). */
export function parseMarker(text: string): Marker | undefined {
  const match = /^([0-9a-f-]{36}) ([1-9][0-9]{0,15})$/.exec(text);
  if (match === null) return undefined;
  const atMs = Number(match[2]);
  return Number.isSafeInteger(atMs) ? { id: match[1] as string, atMs } : undefined;
}

/** What a refused client reads. */
export function lostMessage(atMs: number): string {
  return `the record of revocations was lost at ${new Date(atMs).toISOString()}; log in again`;
}

/** What a refused client reads while this process has not read the record of revocations yet. */
export function unreadMessage(startMs: number): string {
  return `this server has not read the record of revocations since it started at ${new Date(startMs).toISOString()} (the state backend does not answer), so tokens issued before then are refused; log in again`;
}

/**
 * The rule itself: a token of CUTOFF_KINDS issued before the cutoff is refused; one without
 * `iat` too, since nothing says it came after. Other kinds are not concerned. `iat` has whole seconds, so a
 * token of the cutoff's own second is refused unless the cutoff falls on the second: whether it
 * came before the loss or after cannot be told (fail closed). A replica that starts a record
 * waits for the next second before it serves (createRevocationsEpoch), so only logins in the
 * rest of the second in which a running replica finds a loss are refused that way.
 */
export function refusedBefore(cutoffMs: number | undefined, principal: Pick<Principal, 'kind' | 'issuedAt'>): boolean {
  if (cutoffMs === undefined || !CUTOFF_KINDS.has(principal.kind)) return false;
  return principal.issuedAt === undefined || principal.issuedAt * 1000 < cutoffMs;
}

export async function createRevocationsEpoch(deps: RevocationsEpochDeps): Promise<RevocationsEpoch> {
  const { state, log, now } = deps;
  const lostCounter = deps.registry === undefined ? undefined : new Counter({
    name: LOST_METRIC,
    help: 'Times this replica found the record of revocations lost (no marker in the state backend: memory state at every start, a first start, Redis emptied) and began refusing every session token issued before then',
    registers: [deps.registry],
  });
  const notBeforeGauge = deps.registry === undefined ? undefined : new Gauge({
    name: NOT_BEFORE_METRIC,
    help: 'Session tokens (local and SSO) issued before this time (seconds since the epoch) are refused: the record of revocations began then',
    registers: [deps.registry],
    aggregator: 'max',
  });
  let current: Marker | undefined;
  let message = '';
  let closed = false;
  let unsubscribe: (() => Promise<void>) | undefined;
  let checking: Promise<void> | undefined;
  const listeners = new Set<() => void>();
  const processStartMs = deps.processStartMs ?? now() - Math.round(process.uptime() * 1000);
  const skewMs = deps.clockSkewMs ?? (state.kind === 'memory' ? 0 : CLOCK_SKEW_MS);
  const listLoaded = deps.listLoaded ?? (() => true);
  /** Neither the marker nor the list has been read since start yet: tokens of before this process are refused. */
  let unread = true;
  /** The warning that tokens of before this process are refused was logged: say when that ends. */
  let saidUnread = false;
  const unreadText = unreadMessage(processStartMs);

  /** Whether this process still lacks its first reading; says so once when it has it. */
  function stillUnread(): boolean {
    if (!unread) return false;
    if (current === undefined || !listLoaded()) return true;
    unread = false;
    if (saidUnread) log.info({ notBefore: new Date(current.atMs).toISOString() }, 'revocations: the record of revocations is read; tokens issued before this process started are judged by it again');
    return false;
  }

  /** The cutoff in force (ms), with the margin for other replicas' clocks, and what a refused client reads. */
  function cutoff(): { readonly atMs: number; readonly text: string } | undefined {
    if (stillUnread() && (current === undefined || current.atMs < processStartMs)) return { atMs: processStartMs + skewMs, text: unreadText };
    return current === undefined ? undefined : { atMs: current.atMs + skewMs, text: message };
  }

  /** A marker more than the margin ahead of this clock: its id, with the present as its time. */
  function notAhead(marker: Marker): Marker {
    const t = now();
    if (marker.atMs <= t + skewMs) return marker;
    log.warn({ marker: marker.id, markerAt: new Date(marker.atMs).toISOString(), now: new Date(t).toISOString(), marginMs: skewMs }, `revocations: the marker ${MARKER_NAME} of the record of revocations says ${new Date(marker.atMs).toISOString()}, later than this replica's clock and its margin (${String(skewMs)} ms): its present is used instead, so logins made from now on are kept; check the clocks (NTP) of the replicas and Redis`);
    return { id: marker.id, atMs: t };
  }

  function adopt(found: Marker, how: 'made' | 'found' | 'heard'): void {
    const before = current;
    if (before?.id === found.id) return;
    const marker = notAhead(found);
    if (before !== undefined && (before.id === marker.id || marker.atMs <= before.atMs)) return;
    current = marker;
    message = lostMessage(marker.atMs);
    notBeforeGauge?.set(marker.atMs / 1000);
    // A marker found at start is the record this replica joins: nothing was lost.
    if (how === 'found' && before === undefined) return;
    lostCounter?.inc();
    for (const listener of listeners) {
      try {
        listener();
      } catch (err: unknown) {
        log.warn({ err }, 'revocations: a listener failed');
      }
    }
    const at = new Date(marker.atMs).toISOString();
    if (state.kind === 'memory') {
      log.info({ notBefore: at, metric: LOST_METRIC }, `revocations: memory state keeps no revocations across restarts, so every session and workload token issued before this start (${at}) is refused and people log in again; use Redis to keep sessions across restarts`);
    } else {
      log.warn({ notBefore: at, metric: LOST_METRIC }, `revocations: the record of revocations in Redis was lost (its marker ${MARKER_NAME} is gone: a first start, FLUSHALL, a restart without persistence, or an eviction), so every session and workload token issued before ${at} (and up to ${String(skewMs)} ms after, for other replicas' clocks) is refused and people log in again; API tokens are not affected. Give Redis persistence, replicas and maxmemory-policy noeviction to keep sessions`);
    }
  }

  async function read(): Promise<void> {
    let text: string | null;
    try {
      text = await state.hashGet(REVOKED_HASH, MARKER_FIELD);
    } catch (err: unknown) {
      if (!(err instanceof StateUnavailable)) log.warn({ err }, 'revocations: cannot read the marker of the record of revocations');
      return;
    }
    const found = text === null ? undefined : parseMarker(text);
    if (found !== undefined) return adopt(found, 'found');
    let made: Marker;
    try {
      // Redis's clock, one for every replica: a replica with a clock ahead must not set it.
      made = { id: randomUUID(), atMs: state.kind === 'memory' ? processStartMs : await state.time() };
      if (text === null) {
        if (!(await state.hashSetIfAbsent(REVOKED_HASH, MARKER_FIELD, formatMarker(made)))) {
          // Another replica wrote it between the HGET and the HSETNX: its marker is the record's.
          const theirs = await state.hashGet(REVOKED_HASH, MARKER_FIELD);
          const marker = theirs === null ? undefined : parseMarker(theirs);
          if (marker !== undefined) adopt(marker, current === undefined ? 'found' : 'heard');
          return;
        }
      } else {
        log.warn({ key: REVOKED_HASH, field: MARKER_FIELD }, 'revocations: the marker of the record of revocations is unreadable; it is replaced and counted as lost');
        await state.hashSet(REVOKED_HASH, MARKER_FIELD, formatMarker(made));
      }
    } catch (err: unknown) {
      if (!(err instanceof StateUnavailable)) log.warn({ err }, 'revocations: cannot write the marker of the record of revocations');
      return;
    }
    // Refused here before it is shared: this replica's own tokens of before are refused at once.
    adopt(made, 'made');
    await state.publish(REVOCATIONS_EPOCH_CHANNEL, formatMarker(made)).catch(() => undefined);
  }

  /** One read at a time: a tick during a slow read waits for it rather than racing it. */
  function check(): Promise<void> {
    if (closed) return Promise.resolve();
    checking ??= read().finally(() => (checking = undefined));
    return checking;
  }

  function heard(text: string): void {
    const marker = parseMarker(text);
    if (marker !== undefined) adopt(marker, 'heard');
  }

  async function subscribe(): Promise<void> {
    try {
      const off = await state.subscribe(REVOCATIONS_EPOCH_CHANNEL, heard, { onLive: () => void check(), onLost: () => undefined });
      if (closed) await off();
      else unsubscribe = off;
    } catch {
      // The periodic check covers a Redis that is away at start.
      if (!closed) void sleep(RETRY_MS, undefined, { ref: false }).then(() => (closed ? undefined : subscribe()));
    }
  }

  await subscribe();
  await check();
  if (stillUnread()) {
    saidUnread = true;
    log.warn({ notBefore: new Date(processStartMs).toISOString() }, `revocations: the state backend does not answer, so this process has not read the record of revocations: until it has, every session, SSO and workload token issued before it started (${new Date(processStartMs).toISOString()}) is refused, since a revoked one could be among them; people log in again`);
  }
  // A cutoff of now refuses the tokens of its own second and of the clock margin after it
  // (refusedBefore): this replica serves from the next second after them, so its first logins
  // are kept. At most the margin and a second, once per start.
  const first = cutoff();
  const untilNextSecond = first === undefined ? 0 : Math.ceil(first.atMs / 1000) * 1000 - now();
  if (untilNextSecond > 0) await sleep(Math.min(untilNextSecond, skewMs + 1000));
  const timer = setInterval(() => void check(), deps.checkIntervalMs ?? CHECK_INTERVAL_MS);
  timer.unref();

  return {
    notBefore: () => current?.atMs,
    refusal(principal) {
      const held = cutoff();
      return held !== undefined && refusedBefore(held.atMs, principal) ? held.text : undefined;
    },
    check,
    onMoved(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async close() {
      closed = true;
      clearInterval(timer);
      await unsubscribe?.();
    },
  };
}
