/**
 * Connections to the directory, reused between logins and refreshes while they stay bound as
 * the service account. A refresh used to pay for a TCP connection, a bind and an unbind around
 * its two searches; on a reused connection it is the two searches alone.
 *
 * What keeps reuse safe:
 * - Only a connection whose last bind was the service account's, and that ldapts still calls
 *   bound, goes back to the pool. A user's bind (right or wrong: a failed bind leaves the
 *   connection anonymous) or any error closes it, so no one is handed a connection bound as
 *   the last user.
 * - A connection never reconnects: ldapts reopens a closed connection by itself for the next
 *   operation, unbound and, after StartTLS, in clear text. The socket factories given to ldapts
 *   refuse a second connection, so that operation fails instead; a connection taken from the
 *   pool that fails so is replaced by a new one once, in the same login or refresh.
 * - Answers are never kept: every login and refresh asks the directory again.
 * - Refreshes only search, so concurrent ones share one more connection (runSearches), bound once
 *   as the service account and never bound again: the searches of every refresh that reaches
 *   them in one turn of the event loop leave in one write. A refresh's deadline ends that
 *   refresh alone; a connection-level failure retires the shared connection and the refresh is
 *   tried once more on a pooled one. Logins bind as the user, so each has its own connection.
 * - Bounds: at most MAX_OPEN connections at once per connector; a login or refresh beyond that
 *   waits for one to be free, within its session deadline, and past MAX_WAITING waiting ones it
 *   fails at once (the directory is busy) rather than queueing without end. At most MAX_IDLE
 *   connections wait in the pool, each at most IDLE_MS. The caller's signal and the
 *   per-operation timeout apply as before. An idle connection does not keep the process alive,
 *   and close() ends them all.
 */
import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls';
import { isIP } from 'node:net';
import { Client } from 'ldapts';
import type { LdapConfig } from './config.js';
import { DirectoryConnection, DirectoryFailure, describe, tlsOptions, type Timeouts } from './connection.js';
import { Session } from './session.js';

/**
 * Connections open at once per connector: a burst of logins waits for a connection instead of
 * opening one each (the directory's connections are not the callers' to grow), and a refresh
 * waiting for a pooled connection costs less than a new connection and bind.
 */
export const MAX_OPEN = 16;
/** Logins and refreshes waiting for a connection; one more fails at once. */
export const MAX_WAITING = 1_000;
/** Idle connections kept per connector: as many as may be open, so a steady load reuses them all. */
export const MAX_IDLE = MAX_OPEN;
/** Refreshes at once on the shared search connection; more take pooled connections meanwhile. */
export const MAX_SHARED_SEARCHES = 64;
/** An idle connection is closed after this long, before directories and firewalls drop it. */
export const IDLE_MS = 30_000;
/** The unbind at close; a peer that never reads must not hold anything up. */
const CLOSE_WAIT_MS = 1_000;

export interface PoolOptions {
  readonly maxOpen?: number;
  readonly maxWaiting?: number;
  readonly maxIdle?: number;
  readonly idleMs?: number;
}

/** A login or refresh waiting for a connection. */
interface Waiter {
  granted: boolean;
  grant(): void;
}

/** The connection concurrent refreshes share: bound once as the service account, never rebound. */
interface SearchChannel {
  readonly lease: Lease;
  /** Settles when the connection is open and bound (rejects when it could not be). */
  readonly ready: Promise<void>;
  inFlight: number;
  retired: boolean;
  idleTimer?: NodeJS.Timeout;
}

/** One ldapts client and the sockets it was given. */
interface Lease {
  readonly client: Client;
  readonly sockets: Socket[];
  /** Taken from the pool (it has served before), not opened for this session. */
  reused: boolean;
  /** Closing or closed: never goes back to the pool. */
  closing?: Promise<void>;
  idleTimer?: NodeJS.Timeout;
}

export class DirectoryPool {
  private readonly idle: Lease[] = [];
  private readonly waiting: Waiter[] = [];
  private readonly maxOpen: number;
  private readonly maxWaiting: number;
  private readonly maxIdle: number;
  private readonly idleMs: number;
  /** Sessions holding one of the maxOpen connections (or about to open it), the search channel counting as one. */
  private inUse = 0;
  private channel: SearchChannel | undefined;
  private closed = false;

  constructor(
    private readonly config: LdapConfig,
    private readonly timeouts: Timeouts,
    options: PoolOptions = {},
  ) {
    this.maxOpen = options.maxOpen ?? MAX_OPEN;
    this.maxWaiting = options.maxWaiting ?? MAX_WAITING;
    this.maxIdle = Math.min(options.maxIdle ?? MAX_IDLE, this.maxOpen);
    this.idleMs = options.idleMs ?? IDLE_MS;
  }

  /** How many connections wait in the pool (for tests). */
  get idleCount(): number {
    return this.idle.length;
  }

  /**
   * Runs `work` on a connection: a pooled one, or a new one. The session deadline and `signal`
   * end a hung exchange: the promise settles then even if the library's would not, and the
   * connection is closed.
   */
  async run<T>(signal: AbortSignal, work: (conn: DirectoryConnection) => Promise<T>): Promise<T> {
    signal.throwIfAborted();
    const session = new Session(signal, this.timeouts.sessionMs);
    // A free connection is taken without a turn of the promise queue; only a wait awaits.
    if (this.inUse < this.maxOpen) this.inUse++;
    else {
      try {
        await this.waitForConnection(session);
      } catch (err: unknown) {
        session.end();
        throw err;
      }
    }
    let lease: Lease;
    try {
      lease = this.take() ?? this.open();
    } catch (err: unknown) {
      session.end();
      this.release();
      throw err;
    }
    let conn = new DirectoryConnection(lease.client, this.config, lease.reused, lease.sockets);
    try {
      try {
        return await session.race(this.use(lease, conn, work));
      } catch (err: unknown) {
        if (!lease.reused || session.over || !(err instanceof DirectoryFailure && err.stage === 'connect')) throw err;
        // The directory closed a pooled connection (idle timeout, restart): once more on a new one.
        lease = this.open();
        conn = new DirectoryConnection(lease.client, this.config, false, lease.sockets);
        return await session.race(this.use(lease, conn, work));
      }
    } finally {
      session.end();
      if (session.over) {
        // Before the unbind: work still running after the deadline must not use the connection.
        conn.closed = true;
        await this.discard(lease);
      }
      this.release();
    }
  }

  /**
   * Runs a refresh's `work`, which only searches (never binds), on the connection concurrent
   * refreshes share: the searches of every refresh that reaches them in one turn of the event
   * loop leave in one write, and the answers come back on one socket (docs/connectors.md). The
   * session deadline and the signal end this refresh alone; a connection-level failure retires
   * the shared connection, and the next refresh opens another. When it cannot be used (too many
   * refreshes on it, every connection in use), the refresh takes a pooled connection.
   */
  async runSearches<T>(signal: AbortSignal, work: (conn: DirectoryConnection) => Promise<T>): Promise<T> {
    const channel = this.searchChannel();
    if (channel === undefined) return this.run(signal, work);
    signal.throwIfAborted();
    this.enter(channel);
    const session = new Session(signal, this.timeouts.sessionMs);
    const conn = new DirectoryConnection(channel.lease.client, this.config, true, channel.lease.sockets, true);
    try {
      // A connection that lost its bind is never bound again while others use it.
      await session.race(channel.ready);
      if (!channel.lease.client.isBound || channel.lease.closing !== undefined) throw new DirectoryFailure('connect', 'the shared connection to the directory closed');
      return await session.race(work(conn));
    } catch (err: unknown) {
      if (!(err instanceof DirectoryFailure && (err.stage === 'connect' || err.stage === 'service-bind'))) throw err;
      this.retire(channel);
      // The connection, not the refresh, failed: once more on a pooled connection, as a pooled
      // connection that failed is replaced once (searches may be sent again).
      if (session.over) throw err;
    } finally {
      conn.closed = true;
      session.end();
      this.leave(channel);
    }
    return this.run(signal, work);
  }

  /** The shared connection in force, a new one, or undefined when a pooled one must do. */
  private searchChannel(): SearchChannel | undefined {
    const current = this.channel;
    if (current !== undefined) return current.inFlight < MAX_SHARED_SEARCHES ? current : undefined;
    if (this.closed || this.inUse >= this.maxOpen) return undefined;
    this.inUse++;
    const lease = this.open();
    const opening = new DirectoryConnection(lease.client, this.config, false, lease.sockets);
    const ready = this.secure(lease).then(() => opening.serviceBind());
    const channel: SearchChannel = { lease, ready, inFlight: 0, retired: false };
    ready.catch(() => this.retire(channel));
    this.channel = channel;
    return channel;
  }

  private enter(channel: SearchChannel): void {
    if (channel.inFlight++ > 0) return;
    clearTimeout(channel.idleTimer);
    for (const socket of channel.lease.sockets) socket.ref();
  }

  /** The last refresh on it done: it waits idle as a pooled connection does, then closes. */
  private leave(channel: SearchChannel): void {
    if (--channel.inFlight > 0 || channel.retired) return;
    for (const socket of channel.lease.sockets) socket.unref();
    channel.idleTimer = setTimeout(() => this.retire(channel), this.idleMs);
    channel.idleTimer.unref();
  }

  /** Closes the shared connection once; refreshes still on it fail, the next one opens another. */
  private retire(channel: SearchChannel): void {
    if (channel.retired) return;
    channel.retired = true;
    clearTimeout(channel.idleTimer);
    if (this.channel === channel) this.channel = undefined;
    void this.discard(channel.lease).finally(() => this.release());
  }

  /** Waits, within the session's deadline, until a session hands its connection over to this one. */
  private waitForConnection(session: Session): Promise<void> {
    if (this.waiting.length >= this.maxWaiting) {
      return Promise.reject(new DirectoryFailure('busy', `all ${this.maxOpen} connections are in use and ${this.maxWaiting} logins or refreshes already wait for one`));
    }
    let grant: () => void = () => undefined;
    const turn = new Promise<void>((resolve) => {
      grant = resolve;
    });
    const waiter: Waiter = {
      granted: false,
      grant() {
        this.granted = true;
        grant();
      },
    };
    this.waiting.push(waiter);
    return session.race(turn).catch((err: unknown) => {
      // The deadline or the signal came first: give back a connection handed over meanwhile.
      if (waiter.granted) this.release();
      else {
        const at = this.waiting.indexOf(waiter);
        if (at >= 0) this.waiting.splice(at, 1);
      }
      throw err;
    });
  }

  /** The session's connection is free: the next waiting one gets it, else it is one fewer in use. */
  private release(): void {
    const next = this.waiting.shift();
    if (next === undefined) this.inUse--;
    else next.grant();
  }

  /** Closes the idle connections; connections in use are closed when their session ends. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.channel !== undefined) this.retire(this.channel);
    await Promise.all(this.idle.splice(0).map((lease) => this.discard(lease)));
  }

  /** A new connection's StartTLS, when the config asks for it, before anything else is sent. */
  private async secure(lease: Lease): Promise<void> {
    if (this.config.transport !== 'startTLS') return;
    try {
      await lease.client.startTLS(tlsOptions(this.config));
    } catch (err: unknown) {
      throw new DirectoryFailure('connect', `StartTLS failed: ${describe(err)}`, { cause: err });
    }
  }

  private async use<T>(lease: Lease, conn: DirectoryConnection, work: (conn: DirectoryConnection) => Promise<T>): Promise<T> {
    let done = false;
    try {
      if (!lease.reused) await this.secure(lease);
      const result = await work(conn);
      done = true;
      return result;
    } finally {
      conn.closed = true;
      if (done && conn.boundAsService) this.park(lease);
      else await this.discard(lease);
    }
  }

  /** The most recently parked connection that is still open and bound; dead ones are dropped. */
  private take(): Lease | undefined {
    for (let lease = this.idle.pop(); lease !== undefined; lease = this.idle.pop()) {
      clearTimeout(lease.idleTimer);
      if (lease.closing === undefined && lease.client.isBound) {
        for (const socket of lease.sockets) socket.ref();
        return lease;
      }
      void this.discard(lease);
    }
    return undefined;
  }

  private park(lease: Lease): void {
    if (this.closed || lease.closing !== undefined || !lease.client.isBound || this.idle.length >= this.maxIdle) {
      void this.discard(lease);
      return;
    }
    lease.reused = true;
    for (const socket of lease.sockets) socket.unref();
    lease.idleTimer = setTimeout(() => void this.discard(lease), this.idleMs);
    lease.idleTimer.unref();
    this.idle.push(lease);
  }

  /** Unbind and drop the socket, once; a peer that never reads must not hold this up. */
  private discard(lease: Lease): Promise<void> {
    lease.closing ??= (async () => {
      clearTimeout(lease.idleTimer);
      const at = this.idle.indexOf(lease);
      if (at >= 0) this.idle.splice(at, 1);
      let timer: NodeJS.Timeout | undefined;
      const cap = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, CLOSE_WAIT_MS);
      });
      await Promise.race([lease.client.unbind().catch(() => undefined), cap]);
      clearTimeout(timer);
      for (const socket of lease.sockets) socket.destroy();
    })();
    return lease.closing;
  }

  private open(): Lease {
    const sockets: Socket[] = [];
    let opened = false;
    /** The first connection only; ldapts asking for another means the first one closed. */
    const fresh = <S extends Socket>(connect: () => S): S => {
      if (opened) throw new Error('the directory closed the connection');
      opened = true;
      const socket = connect();
      sockets.push(socket);
      return socket;
    };
    const client = new Client({
      url: serverUrl(this.config),
      connectTimeout: this.timeouts.connectMs,
      timeout: this.timeouts.operationMs,
      // Only for ldaps: ldapts takes any tlsOptions as "connect with TLS", which StartTLS must not do.
      ...(this.config.transport === 'ldaps' ? { tlsOptions: tlsOptions(this.config) } : {}),
      createConnection: ((port: number, host: string) => fresh(() => netConnect(port, host))) as typeof netConnect,
      createSecureConnection: ((...args: [ConnectionOptions] | [number, string, ConnectionOptions]) => {
        if (args.length === 1) {
          // StartTLS: an upgrade of the socket already open, not a new connection.
          const socket = tlsConnect(args[0]);
          sockets.push(socket);
          return socket;
        }
        const [port, host, options] = args;
        return fresh(() => tlsConnect(port, host, options));
      }) as typeof tlsConnect,
    });
    return { client, sockets, reused: false };
  }
}

function serverUrl(config: LdapConfig): string {
  const host = isIP(config.host) === 6 ? `[${config.host}]` : config.host;
  return `${config.transport === 'ldaps' ? 'ldaps' : 'ldap'}://${host}:${config.port}`;
}
