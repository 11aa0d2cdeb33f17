/**
 * The operations of one login or refresh on a directory connection, over ldapts: the service
 * (or anonymous) bind, the user and group searches, the user's bind. The connection itself,
 * TLS, its reuse and its close are ./pool.ts's; this class tracks who the connection is bound
 * as, so that only one bound as the service account is reused.
 *
 * Every failure that is not "wrong credentials" becomes a `DirectoryFailure` naming its stage,
 * for the connector to log and turn into a user-safe error.
 */
import { rootCertificates, type ConnectionOptions } from 'node:tls';
import { isIP, type Socket } from 'node:net';
import { ConstraintViolationError, InvalidCredentialsError, NoSuchObjectError, type Client, type Entry } from 'ldapts';
import type { GroupSearch, LdapConfig } from './config.js';
import { attributeValues, firstValue, requestedAttributes, type DirectoryEntry } from './entry.js';
import { matchFilter } from './filter.js';
import { inSpan, SpanKind } from '../../src/tracing/spans.js';

/** TCP connect plus, for ldaps, the TLS handshake. */
export const CONNECT_TIMEOUT_MS = 10_000;
/** Each LDAP operation (bind, search, StartTLS). */
export const OPERATION_TIMEOUT_MS = 10_000;
/** A whole login or refresh, whatever hangs (a StartTLS handshake has no timeout of its own). */
export const SESSION_TIMEOUT_MS = 30_000;
/** The server gives up a search after this many seconds too. */
const SEARCH_TIME_LIMIT_S = 10;

export interface Timeouts {
  readonly connectMs: number;
  readonly operationMs: number;
  readonly sessionMs: number;
}

export const DEFAULT_TIMEOUTS: Timeouts = { connectMs: CONNECT_TIMEOUT_MS, operationMs: OPERATION_TIMEOUT_MS, sessionMs: SESSION_TIMEOUT_MS };

export type FailureStage = 'connect' | 'service-bind' | 'user-search' | 'user-bind' | 'group-search' | 'timeout' | 'busy';

export class DirectoryFailure extends Error {
  constructor(readonly stage: FailureStage, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'DirectoryFailure';
  }
}

/** The user search found more than one entry: the filter is too wide. */
export class AmbiguousUser extends Error {
  constructor() {
    super('the user search matched more than one entry; make userSearch.filter or userSearch.username narrower');
    this.name = 'AmbiguousUser';
  }
}

/** A group entry without groupSearch.nameAttr. */
export class UnnamedGroup extends Error {
  constructor(readonly dn: string, readonly attribute: string) {
    super(`group ${dn} has no ${attribute} (groupSearch.nameAttr)`);
    this.name = 'UnnamedGroup';
  }
}

export function tlsOptions(config: LdapConfig): ConnectionOptions {
  return {
    host: config.host,
    // SNI takes names only; Node warns when given an IP address.
    ...(isIP(config.host) === 0 ? { servername: config.host } : {}),
    rejectUnauthorized: !config.insecureSkipVerify,
    ...(config.rootCAs.length > 0 ? { ca: [...rootCertificates, ...config.rootCAs] } : {}),
    ...(config.clientCert !== undefined && config.clientKey !== undefined ? { cert: config.clientCert, key: config.clientKey } : {}),
  };
}

/** A reason for the log: the socket or TLS error with its code, or the LDAP result by name and number. */
export function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'number') {
    // ldapts appends " Code: 0x31" to the server's diagnostic message, which is often empty.
    const diagnostic = err.message.replace(/\s*Code: 0x[0-9a-f]+$/i, '').trim();
    return `${err.name} (LDAP result ${code})${diagnostic === '' ? '' : `: ${diagnostic}`}`;
  }
  return typeof code === 'string' && !err.message.includes(code) ? `${err.message} (${code})` : err.message;
}

function isConnectionError(err: unknown): boolean {
  // ldapts result-code errors carry a numeric `code`; socket and TLS errors a string one or none.
  return !(err instanceof Error && typeof (err as { code?: unknown }).code === 'number');
}

const corkedThisTurn = new WeakSet<Socket>();

/**
 * Corks a shared connection's socket until the end of this turn of the event loop (setImmediate
 * runs after the I/O callbacks of the turn), so the requests of every refresh that reached its
 * searches in this turn leave in one write.
 */
function corkForThisTurn(socket: Socket): void {
  if (corkedThisTurn.has(socket)) return;
  corkedThisTurn.add(socket);
  socket.cork();
  setImmediate(() => {
    corkedThisTurn.delete(socket);
    socket.uncork();
  });
}

export class DirectoryConnection {
  /** Set when the session ends; every operation checks it first. */
  closed = false;
  /** The last bind that succeeded was the service account's (or the anonymous one configured). */
  #asService: boolean;

  /** `boundAsService`: a pooled connection, already bound as the service account. */
  constructor(
    private readonly client: Client,
    private readonly config: LdapConfig,
    boundAsService: boolean,
    /** The sockets the client was given, the one it writes to last (a StartTLS upgrade follows the plain one). */
    private readonly sockets: readonly Socket[] = [],
    /** Shared by concurrent refreshes: requests sent in one turn of the event loop leave in one write. */
    private readonly shared = false,
  ) {
    this.#asService = boundAsService;
  }

  /**
   * Runs `start`, which sends several requests without awaiting between them, with the socket
   * corked: they leave in one write, so the directory wakes up once for all of them, and both
   * sides make one system call instead of one per request (docs/connectors.md). ldapts writes a
   * request a few promise steps after it is asked for; the socket is uncorked after every step
   * queued now has run (process.nextTick runs once the promise queue is empty). A request that
   * must wait for something else first simply leaves later, in its own write.
   */
  inOneWrite<T>(start: () => T): T {
    // A shared connection corks every search for the turn already (joinTurn).
    if (this.shared) return start();
    const socket = this.sockets.at(-1);
    socket?.cork();
    try {
      return start();
    } finally {
      if (socket !== undefined) process.nextTick(() => socket.uncork());
    }
  }

  /** On a shared connection, a search waits for the end of the turn to leave with the others. */
  private joinTurn(): void {
    const socket = this.sockets.at(-1);
    if (this.shared && socket !== undefined) corkForThisTurn(socket);
  }

  get boundAsService(): boolean {
    return this.#asService && this.client.isBound;
  }

  private ensureOpen(): void {
    if (this.closed) throw new DirectoryFailure('timeout', 'the session ended before this operation');
  }

  /** As the service account, or anonymously when none is configured (a simple bind with an empty name). */
  async serviceBind(): Promise<void> {
    this.ensureOpen();
    if (this.boundAsService) return;
    const bind = this.config.bind;
    try {
      if (bind === undefined) await ldapSpan('bind', 'service-bind', () => this.client.bind('', ''));
      else await ldapSpan('bind', 'service-bind', () => this.client.bind(bind.dn, bind.password));
      this.#asService = true;
    } catch (err: unknown) {
      const stage = isConnectionError(err) ? 'connect' : 'service-bind';
      const who = bind === undefined ? 'the anonymous bind' : `the bind as ${bind.dn}`;
      throw new DirectoryFailure(stage, `${stage === 'connect' ? 'cannot reach the directory' : `${who} was refused`}: ${describe(err)}`, { cause: err });
    }
  }

  /** The one entry for `username`, undefined when none; AmbiguousUser when several. */
  async findUser(username: string): Promise<DirectoryEntry | undefined> {
    const search = this.config.userSearch;
    const attributes = requestedAttributes([
      search.idAttr, search.emailAttr, search.username, search.nameAttr, search.preferredUsernameAttr,
      ...(this.config.groupSearch?.userMatchers.map((m) => m.userAttr) ?? []),
    ]);
    this.ensureOpen();
    this.joinTurn();
    let entries: Entry[];
    try {
      ({ searchEntries: entries } = await ldapSpan('search', 'user-search', () => this.client.search(search.baseDN, {
        scope: search.scope,
        filter: matchFilter(search.filter, search.username, username),
        attributes,
        // Two are enough to know it is ambiguous; ldapts returns them with the size-limit result.
        sizeLimit: 2,
        timeLimit: SEARCH_TIME_LIMIT_S,
      })));
    } catch (err: unknown) {
      if (err instanceof NoSuchObjectError) return undefined;
      throw new DirectoryFailure(isConnectionError(err) ? 'connect' : 'user-search', `the user search failed: ${describe(err)}`, { cause: err });
    }
    if (entries.length > 1) throw new AmbiguousUser();
    return entries[0];
  }

  /** True when the directory accepts the password; false for a wrong one. Never binds with an empty password. */
  async userBind(dn: string, password: string): Promise<boolean> {
    // An LDAP simple bind with a name and an empty password is an unauthenticated bind that succeeds.
    if (password === '') return false;
    this.ensureOpen();
    // From here the connection is the user's, or anonymous after a refused bind (RFC 4513 §4.2.1).
    this.#asService = false;
    try {
      await ldapSpan('bind', 'user-bind', () => this.client.bind(dn, password));
      return true;
    } catch (err: unknown) {
      if (err instanceof InvalidCredentialsError || err instanceof ConstraintViolationError) return false;
      throw new DirectoryFailure(isConnectionError(err) ? 'connect' : 'user-bind', `the user's bind failed: ${describe(err)}`, { cause: err });
    }
  }

  /**
   * Group names for the user by every matcher, each once, in the order found. With
   * `recursionGroupAttr`, the groups holding a found group's DN in that attribute are followed
   * breadth-first (Dex); a group already seen is not searched again, so cycles end.
   */
  async groupsOf(user: DirectoryEntry): Promise<string[]> {
    const groupSearch = this.config.groupSearch;
    if (groupSearch === undefined) return [];
    const names: string[] = [];
    for (const matcher of groupSearch.userMatchers) {
      const queue: DirectoryEntry[] = [];
      for (const value of attributeValues(user, matcher.userAttr)) queue.push(...(await this.groupsMatching(groupSearch, matcher.groupAttr, value)));
      const seen = new Set<string>();
      for (let group = queue.shift(); group !== undefined; group = queue.shift()) {
        const key = group.dn.toLowerCase();
        if (seen.has(key)) continue;
        seen.add(key);
        const name = firstValue(group, groupSearch.nameAttr);
        if (name === undefined) throw new UnnamedGroup(group.dn, groupSearch.nameAttr);
        if (!names.includes(name)) names.push(name);
        if (matcher.recursionGroupAttr !== undefined) queue.push(...(await this.groupsMatching(groupSearch, matcher.recursionGroupAttr, group.dn)));
      }
    }
    return names;
  }

  private async groupsMatching(groupSearch: GroupSearch, groupAttr: string, value: string): Promise<Entry[]> {
    this.ensureOpen();
    this.joinTurn();
    try {
      const { searchEntries } = await ldapSpan('search', 'group-search', () => this.client.search(groupSearch.baseDN, {
        scope: groupSearch.scope,
        filter: matchFilter(groupSearch.filter, groupAttr, value),
        attributes: [groupSearch.nameAttr],
        timeLimit: SEARCH_TIME_LIMIT_S,
      }));
      return searchEntries;
    } catch (err: unknown) {
      // Dex: a missing group base means no groups, not a failed login.
      if (err instanceof NoSuchObjectError) return [];
      throw new DirectoryFailure(isConnectionError(err) ? 'connect' : 'group-search', `the group search failed: ${describe(err)}`, { cause: err });
    }
  }
}

/**
 * One LDAP operation as a span (`ldap.bind`, `ldap.search`) with its stage; never a DN, a filter
 * or a password. Starts the operation in the same turn, so a corked turn still leaves in one write.
 */
function ldapSpan<T>(op: 'bind' | 'search', stage: FailureStage, work: () => Promise<T>): Promise<T> {
  return inSpan(`ldap.${op}`, { 'svc.ldap.stage': stage }, work, SpanKind.CLIENT);
}
