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
  /** Sessions holding one of the maxOpen connections (or about to open it). */
  private inUse = 0;
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
    await Promise.all(this.idle.splice(0).map((lease) => this.discard(lease)));
  }

  private async use<T>(lease: Lease, conn: DirectoryConnection, work: (conn: DirectoryConnection) => Promise<T>): Promise<T> {
    let done = false;
    try {
      if (!lease.reused && this.config.transport === 'startTLS') {
        try {
          await lease.client.startTLS(tlsOptions(this.config));
        } catch (err: unknown) {
          throw new DirectoryFailure('connect', `StartTLS failed: ${describe(err)}`, { cause: err });
        }
      }
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

/** The deadline of one login or refresh, and its caller's signal. */
class Session {
  over = false;
  private readonly timer: NodeJS.Timeout;
  private readonly onAbort: () => void;
  private readonly ended: Promise<never>;

  constructor(private readonly signal: AbortSignal, sessionMs: number) {
    let fail: (err: unknown) => void = () => undefined;
    this.ended = new Promise<never>((_, reject) => {
      fail = reject;
    });
    // Raced only; a rejection nobody awaits any more must not surface as unhandled.
    this.ended.catch(() => undefined);
    this.timer = setTimeout(() => {
      this.over = true;
      fail(new DirectoryFailure('timeout', `no answer within ${sessionMs} ms`));
    }, sessionMs);
    this.onAbort = () => {
      this.over = true;
      fail(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    };
    signal.addEventListener('abort', this.onAbort, { once: true });
  }

  race<T>(work: Promise<T>): Promise<T> {
    // Work that loses the race still ends (and closes its connection) on its own.
    work.catch(() => undefined);
    return Promise.race([work, this.ended]);
  }

  end(): void {
    clearTimeout(this.timer);
    this.signal.removeEventListener('abort', this.onAbort);
  }
}
