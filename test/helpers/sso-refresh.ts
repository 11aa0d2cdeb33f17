/**
 * Refresh grants at the bundled identity provider of svc replicas that share one config dir and
 * one Redis, for the failover test and benchmark: a real slapd (fixtures/ldap/ldap-connector.ldif)
 * behind an LDAP connector in idp.config, refresh tokens obtained through the password form (no
 * browser), and refresh grants sent straight to each replica's token endpoint.
 *
 * Both replicas serve the same `url` (the issuer is `<url>/api/idp`), so a small HTTP forwarder
 * listens there, as a load balancer would, and sends the logins to the first replica; the refresh
 * grants go to the replica the caller names (the token endpoint does not look at the Host).
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as client from 'openid-client';
import YAML from 'yaml';
import { webClientSecret } from '../../src/idp/clients.js';
import type { RedisTopology } from '../../src/state/redis-topology.js';
import { ldapConnectorConfig } from '../connectors/ldap/fixture.js';
import { accountsConfigDir, SECRET_KEY } from './accounts-fixture.js';
import { authorizationRequest, svcWebClient } from './authorization.js';
import { FormBrowser, isPage } from './form-browser.js';
import { startForwarder } from './forwarder.js';
import { freePort, startPeer, type Peer } from './peers.js';
import { startReplica, stopReplica, type Replica } from './replica-process.js';

const FIXTURES = fileURLToPath(new URL('../../fixtures/', import.meta.url));
/** A directory user who is no local account of the accounts fixture. */
const SSO_USER = { username: 'erin', password: 'erin123' } as const;

export interface SsoRefresh {
  /** svc-cm entries: `url` (the forwarder's) and idp.config with the LDAP connector. */
  readonly cm: Record<string, string>;
  /** svc-secret entries the connector refers to. */
  readonly secret: Record<string, string>;
  /** Tells the forwarder where the replicas are (once they are started). */
  use(replicas: readonly Replica[]): void;
  /** Logs in through the password form with offline_access; the refresh token. */
  offlineLogin(): Promise<string>;
  /** Revokes a token at the provider (RFC 7009, answered 200). */
  revoke(token: string): Promise<void>;
  stop(): Promise<void>;
}

/** One refresh grant's answer: the HTTP status (0: no answer), and the rotated token or the error. */
export interface RefreshAnswer {
  readonly status: number;
  readonly refreshToken?: string;
  readonly error?: string;
}

export async function startSsoRefresh(): Promise<SsoRefresh> {
  const ldapPort = await freePort();
  const slapd: Peer = await startPeer('start-slapd.sh', [String(ldapPort), '0'], { USERS_LDIF: join(FIXTURES, 'ldap', 'ldap-connector.ldif') });
  let replicas: readonly Replica[] = [];
  const forwarder = await freePort().then((port) => startForwarder(port, () => replicas[0]?.url)).catch(async (err: unknown) => {
    await slapd.stop();
    throw err;
  });
  const { url } = forwarder;
  const redirectUri = `${url}/auth/callback`;
  let rp: client.Configuration | undefined;

  return {
    cm: { url, 'idp.config': YAML.stringify({ connectors: [{ type: 'ldap', id: 'corp', name: 'Corp directory', config: ldapConnectorConfig(ldapPort) }] }) },
    secret: { 'ldap.bindPW': 'readerpw' },
    use(started) {
      replicas = started;
      // New replicas may be on another config dir (keys, clients): discover them again.
      rp = undefined;
    },
    async offlineLogin() {
      rp ??= await svcWebClient(url, SECRET_KEY);
      const login = await authorizationRequest(rp, redirectUri, 'openid offline_access');
      const browser = new FormBrowser();
      const form = await browser.go(login.href, redirectUri);
      if (!isPage(form)) throw new Error('expected the password form');
      const done = await browser.submit(form, { ...SSO_USER }, redirectUri);
      if (isPage(done)) throw new Error(`expected the redirect with a code, got ${done.status}; the replica logged:\n${replicas[0]?.logSince(0) ?? ''}`);
      const tokens = await client.authorizationCodeGrant(rp, done, { pkceCodeVerifier: login.verifier, expectedState: login.state });
      if (tokens.refresh_token === undefined) throw new Error('no refresh token with offline_access');
      return tokens.refresh_token;
    },
    async revoke(token) {
      rp ??= await svcWebClient(url, SECRET_KEY);
      await client.tokenRevocation(rp, token);
    },
    async stop() {
      await forwarder.close();
      await slapd.stop();
    },
  };
}

/**
 * The load of the failover test and bench logs alice in hundreds of times: past the default bound
 * of 50 sessions per account the oldest would end, and with them the tokens the test keeps.
 */
const MANY_SESSIONS = { SVC_SESSIONS_PER_ACCOUNT: '100000' } as const;

/**
 * Two replicas on `topology`, sharing a config dir with the accounts fixture and the provider's
 * LDAP connector (startSsoRefresh), for the length of `run`; then stopped, and the dir removed.
 * `shared`: a startSsoRefresh of the caller's (one slapd for several runs), which it stops itself.
 */
export async function withSsoReplicas<T>(topology: RedisTopology, run: (replicas: readonly Replica[], sso: SsoRefresh, another: () => Promise<Replica>) => Promise<T>, shared?: SsoRefresh): Promise<T> {
  const sso = shared ?? await startSsoRefresh();
  const dir = accountsConfigDir({ cm: sso.cm, secret: sso.secret });
  const redis = topology.kind === 'standalone' ? topology.url : JSON.stringify(topology);
  let replicas: Replica[] = [];
  /** Replicas started later by `another` (on the same config and state), stopped with the rest. */
  const later: Replica[] = [];
  const another = async (): Promise<Replica> => {
    const replica = await startReplica(dir, redis, MANY_SESSIONS);
    later.push(replica);
    return replica;
  };
  try {
    replicas = await Promise.all([startReplica(dir, redis, MANY_SESSIONS), startReplica(dir, redis, MANY_SESSIONS)]);
    sso.use(replicas);
    return await run(replicas, sso, another);
  } finally {
    await Promise.all([...replicas, ...later].map((r) => stopReplica(r)));
    if (shared === undefined) await sso.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * One client's chain of refresh tokens, as svc's web client keeps one: an SSO login with
 * offline_access, then a refresh grant with each rotated token; a new login after `perChain`
 * grants (the provider's grant index holds 1,000 live tokens) or once the provider refuses the
 * chain (invalid_grant).
 */
export class RefreshChain {
  #token: string | undefined;
  #grants = 0;

  constructor(private readonly sso: SsoRefresh, private readonly perChain: number) {}

  /** Logs in when no chain is under way: whether that login worked; undefined when none was needed. */
  async start(): Promise<boolean | undefined> {
    if (this.#token !== undefined) return undefined;
    this.#token = await this.sso.offlineLogin().catch(() => undefined);
    this.#grants = 0;
    return this.#token !== undefined;
  }

  /** The next refresh grant of the chain (start() first), at `replica`. */
  async refresh(replica: Replica): Promise<RefreshAnswer> {
    if (this.#token === undefined) throw new Error('no refresh chain under way: start() first');
    const answer = await refreshGrant(replica, this.#token);
    if (answer.refreshToken !== undefined) this.#token = ++this.#grants >= this.perChain ? undefined : answer.refreshToken;
    else if (answer.error === 'invalid_grant') this.#token = undefined;
    return answer;
  }
}

const BASIC = `Basic ${Buffer.from(`svc:${encodeURIComponent(webClientSecret(SECRET_KEY))}`).toString('base64')}`;

/** grant_type=refresh_token at `replica`'s token endpoint, as svc's web client. */
export async function refreshGrant(replica: Replica, refreshToken: string): Promise<RefreshAnswer> {
  try {
    const res = await fetch(`${replica.url}/api/idp/token`, {
      method: 'POST',
      headers: { authorization: BASIC, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken }),
      signal: AbortSignal.timeout(5_000),
    });
    const body = (await res.json().catch(() => ({}))) as Record<string, unknown>;
    const rotated = body['refresh_token'];
    const error = body['error'];
    return { status: res.status, ...(typeof rotated === 'string' ? { refreshToken: rotated } : {}), ...(typeof error === 'string' ? { error } : {}) };
  } catch {
    return { status: 0 };
  }
}
