/**
 * Brings back a Redis client that ioredis gave up on (status 'end'), so that a worker never
 * stays cut off from Redis after a failover.
 *
 * ioredis 6 ends a client for good, with no retry, when a connection attempt fails as a whole
 * rather than as a socket: on Sentinel, a reconnect asks the sentinels where the primary is, and
 * if the client is disconnected "to reconnect" while that question is under way (the failover
 * detector on +switch-master, or a READONLY reply through `reconnectOnError`), the connector
 * drops the answer with "Connection is closed." and the client ends. A failover during a
 * reconnect (SENTINEL FAILOVER, then the new primary killed) does exactly that. Nothing in
 * ioredis restarts it: every later call failed with "unreachable (end)" until the process was
 * restarted, and login throttling stayed on the worker's own memory.
 *
 * The same client object is connected again (`connect()` is allowed from 'end'), so every
 * holder of it keeps working without being told. Rejected: a new client in its place (every
 * module holding the old one would need a way to learn of the new one); exiting the worker so
 * that the primary restarts it (in-flight requests fail, and a worker that keeps failing to
 * reconnect would stop the whole server through the restart limit).
 *
 * Not for the subscriber connection: ./redis-subscriber.ts already replaces an ended one.
 */
import type { StateLog } from './state.js';

/** The first attempt after the client ended; each failed one doubles it, up to REVIVE_MAX_MS. */
export const REVIVE_FIRST_MS = 100;
export const REVIVE_MAX_MS = 5_000;

/** The part of an ioredis client (one Redis or a Cluster) this module uses. */
export interface EndableClient {
  readonly status: string;
  connect(): Promise<void>;
  on(event: 'end' | 'ready', listener: () => void): unknown;
}

export interface ReviveDeps {
  /** Names the connection in the log ('redis', 'redis (replicated writes)'). */
  readonly what: string;
  /** The topology, as the log names it (never a password). */
  readonly where: string;
  readonly log: StateLog;
  /** True once the backend is being closed: an 'end' then is ours, and stays. */
  readonly closed: () => boolean;
  /** Told each time the client is connected again after it ended (for the metric). */
  readonly revived?: () => void;
}

export function reviveWhenEnded(client: EndableClient, deps: ReviveDeps): void {
  let attempts = 0;
  let timer: NodeJS.Timeout | undefined;

  function schedule(): void {
    if (deps.closed() || timer !== undefined) return;
    const delay = Math.min(REVIVE_FIRST_MS * 2 ** attempts, REVIVE_MAX_MS);
    if (attempts === 0) {
      deps.log.warn({ redis: deps.where, retryInMs: delay }, `${deps.what}: the client gave up reconnecting (ended); connecting it again`);
    }
    attempts++;
    timer = setTimeout(function reconnectEnded() {
      timer = undefined;
      if (deps.closed() || client.status !== 'end') return;
      // A failed attempt ends the client again, and its 'end' schedules the next one.
      client.connect().catch(() => undefined);
    }, delay);
    timer.unref();
  }

  client.on('end', schedule);
  client.on('ready', function revivedReady() {
    if (attempts === 0) return;
    attempts = 0;
    deps.log.info({ redis: deps.where }, `${deps.what}: connected again after the client had ended`);
    deps.revived?.();
  });
}
