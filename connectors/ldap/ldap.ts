/**
 * The LDAP password connector (Dex's connector/ldap, escaping the username once). A login:
 * refuse an empty password before any connection, bind as the service account (or
 * anonymously), find exactly one user by `(&<filter>(<username>=<escaped>))`, have the caller
 * count the attempt under that entry's DN (LoginContext.admitEntry), bind as the DN with the password, bind back as the service account and read the groups.
 *
 * Wrong password and unknown user both answer null, so nothing tells one from the other; nor
 * does the time taken: for an unknown user the password is bound against a DN that names no
 * entry (under the user search's base, one random RDN per connector), so both paths make the
 * same round trips and binds.
 * Anything else is thrown as a user-safe `UpstreamUnavailable` or `UpstreamMisconfigured`
 * carrying the operator's reason (never a password), which the caller logs.
 */
import { randomBytes } from 'node:crypto';
import type { Identity, LoginContext, PasswordConnector } from '../connector.js';
import type { ConnectorDeps } from '../connector.js';
import { UpstreamMisconfigured, UpstreamUnavailable } from '../errors.js';
import { innermostCause } from '../../src/lib/error-cause.js';
import type { LdapConfig } from './config.js';
import { AmbiguousUser, DEFAULT_TIMEOUTS, DirectoryFailure, UnnamedGroup, describe, type DirectoryConnection, type Timeouts } from './connection.js';
import { MissingAttribute, identityFromEntry, readConnectorData } from './identity.js';
import { DirectoryPool, type PoolOptions } from './pool.js';

const UNREACHABLE = 'the directory is unreachable; try again later';
const MISCONFIGURED = 'the directory could not complete the login; the server log says why';

export interface LdapConnectorOptions {
  readonly timeouts?: Timeouts;
  readonly pool?: PoolOptions;
}

export class LdapConnector implements PasswordConnector {
  readonly kind = 'password';
  readonly prompt: string;
  /** Connections bound as the service account, reused by the next login or refresh. */
  readonly pool: DirectoryPool;
  /** The bind target of an unknown username (see the header). */
  private readonly absentDn: string;

  constructor(
    private readonly config: LdapConfig,
    private readonly deps: ConnectorDeps,
    options: LdapConnectorOptions = {},
  ) {
    this.prompt = config.usernamePrompt;
    this.pool = new DirectoryPool(config, options.timeouts ?? DEFAULT_TIMEOUTS, options.pool);
    this.absentDn = `cn=svc-absent-${randomBytes(12).toString('hex')},${config.userSearch.baseDN}`;
  }

  async login(username: string, password: string, ctx: LoginContext): Promise<Identity | null> {
    // Before any connection: a simple bind with an empty password is an unauthenticated bind, which succeeds.
    if (password === '' || username === '') return null;
    return this.session('login', ctx, async (conn) => {
      await conn.serviceBind();
      const user = await conn.findUser(username);
      if (user === undefined) {
        ctx.refused?.('unknown user');
        return this.bindAbsent(conn, password);
      }
      // Counted under the entry before its bind: a spelling of the name that the directory
      // matches and the caller's fold does not still spends this entry's budget.
      if (ctx.admitEntry !== undefined && !(await ctx.admitEntry(user.dn))) {
        ctx.refused?.('entry locked');
        return null;
      }
      if (!(await conn.userBind(user.dn, password))) {
        ctx.refused?.('wrong password');
        return null;
      }
      // Groups are read with the service account's rights, as Dex does, not the user's.
      if (!ctx.wantGroups || this.config.groupSearch === undefined) return identityFromEntry(user, this.config.userSearch, username, []);
      await conn.serviceBind();
      return identityFromEntry(user, this.config.userSearch, username, await conn.groupsOf(user));
    });
  }

  /** The user and groups read again; null when the user is gone or the name is now another entry's. */
  async refresh(identity: Identity, ctx: LoginContext): Promise<Identity | null> {
    const data = readConnectorData(identity.connectorData);
    if (data === undefined) return null;
    return this.session('refresh', ctx, async (conn) => {
      await conn.serviceBind();
      // Groups found by the user's DN alone are asked for beside the user, with the DN of the
      // login: one round trip instead of two. They count only if the user still has that DN.
      const [early, asked] = conn.inOneWrite(() => [
        ctx.wantGroups && groupsNeedOnlyTheDn(this.config) ? settled(conn.groupsOf({ dn: data.dn })) : undefined,
        conn.findUser(data.username),
      ] as const);
      const user = await asked.catch(async (err: unknown) => {
        await early;
        throw err;
      });
      if (user === undefined || user.dn.toLowerCase() !== data.dn.toLowerCase()) {
        await early;
        if (user !== undefined) this.deps.log.info({ dn: data.dn, now: user.dn }, 'ldap: refresh refused: the username now names another entry');
        return null;
      }
      const found = await early;
      let groups: string[] = [];
      if (found !== undefined && user.dn === data.dn) groups = unwrap(found);
      else if (ctx.wantGroups) groups = await conn.groupsOf(user);
      return identityFromEntry(user, this.config.userSearch, data.username, groups);
    });
  }

  close(): Promise<void> {
    return this.pool.close();
  }

  /**
   * The work of a wrong password for a name that has no entry: a bind the directory refuses.
   * Whatever it answers, the login is refused; only a lost connection is an error, as it would
   * be for a real user.
   */
  private async bindAbsent(conn: DirectoryConnection, password: string): Promise<null> {
    try {
      await conn.userBind(this.absentDn, password);
    } catch (err: unknown) {
      if (err instanceof DirectoryFailure && err.stage === 'connect') throw err;
    }
    return null;
  }

  private async session(action: 'login' | 'refresh', ctx: LoginContext, work: (conn: DirectoryConnection) => Promise<Identity | null>): Promise<Identity | null> {
    try {
      // A refresh only searches, so it may share a connection; a login binds as the user.
      return await (action === 'refresh' ? this.pool.runSearches(ctx.signal, work) : this.pool.run(ctx.signal, work));
    } catch (err: unknown) {
      throw this.userSafe(err, ctx.signal);
    }
  }

  /**
   * What a person may see, with the operator's reason on it (UpstreamErrorOptions.reason): the
   * caller logs the attempt once, with the connector, the username and the request id, and the
   * error with its causes and stack at debug; the connector adds no line of its own.
   */
  private userSafe(err: unknown, signal: AbortSignal): unknown {
    if (signal.aborted) return err;
    const server = `${this.config.host}:${this.config.port}`;
    if (err instanceof DirectoryFailure) return new UpstreamUnavailable(UNREACHABLE, { cause: err, reason: reasonOf(err, server) });
    if (err instanceof AmbiguousUser || err instanceof MissingAttribute || err instanceof UnnamedGroup) {
      return new UpstreamMisconfigured(MISCONFIGURED, { cause: err, reason: `directory misconfigured: ${err.message}` });
    }
    return new UpstreamUnavailable(UNREACHABLE, { cause: err, reason: `directory failed (${server}): ${describe(err)}` });
  }
}

/** Socket errors that mean nothing answered at the address: the code and the address say it all. */
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT']);

/** "directory unreachable: ECONNREFUSED ldap.corp:636", or the failure's own sentence. */
function reasonOf(err: DirectoryFailure, server: string): string {
  const code = (innermostCause(err) as { code?: unknown }).code;
  if (err.stage === 'connect' && typeof code === 'string' && UNREACHABLE_CODES.has(code)) return `directory unreachable: ${code} ${server}`;
  const why = err.message.replace(/^cannot reach the directory: /, '');
  return err.stage === 'connect' || err.stage === 'timeout' || err.stage === 'busy' ? `directory unreachable (${server}): ${why}` : `directory failed (${server}): ${why}`;
}

/** Every group matcher names the user by DN (the usual `member` or `uniqueMember`). */
function groupsNeedOnlyTheDn(config: LdapConfig): boolean {
  const matchers = config.groupSearch?.userMatchers ?? [];
  return matchers.length > 0 && matchers.every((m) => m.userAttr.toLowerCase() === 'dn');
}

type Settled<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: unknown };

/** A promise that never rejects: one still running when the refresh is refused cannot surface as unhandled. */
function settled<T>(promise: Promise<T>): Promise<Settled<T>> {
  return promise.then((value) => ({ ok: true, value }), (error: unknown) => ({ ok: false, error }));
}

function unwrap<T>(result: Settled<T>): T {
  if (result.ok) return result.value;
  throw result.error;
}
