/**
 * oidc-provider with nothing of svc around it, for bench/sso-login.ts to show what the library
 * alone gives on this machine under the same refresh load: the same version, RS256 ID tokens,
 * refresh tokens rotated at every use as svc's are, one confidential client; but accounts with
 * fixed claims (no connector, no directory), a plain Map for storage (no state backend, no grant
 * index; oidc-provider's own development adapter is not used: its grant bookkeeping is quadratic)
 * and no middleware. Seeds one grant and refresh token per chain, prints them as a JSON array on
 * a line of its own (the library prints notices too), then serves until SIGTERM.
 *
 * The refresh floor (BENCH_BARE_LDAP set): the same, plus what svc's refresh asks of the
 * directory. svc's LDAP connector (connectors/ldap, the config given, the same slapd) logs each
 * user in once at start, and at each refresh grant findAccount asks it again for the user and
 * groups, with a deadline as svc's provider sets one, and builds the claims from its answer; a
 * refusal is invalid_grant. That is the work every defence of svc's refresh rests on, and nothing
 * else of svc's (storage, grant index, middleware, audit).
 *
 * Usage: node --import tsx bench/bare-provider.ts <port> <chains> <client-secret>
 *   BENCH_BARE_LDAP='{"config": <the ldap connector's config, bindPW inline>, "users": [["alice", "alice123"], …]}'
 */
import { generateKeyPairSync } from 'node:crypto';
import Provider, { type Adapter, type AdapterPayload, type FindAccount } from 'oidc-provider';
import { pino } from 'pino';
import { ldap as ldapType } from '../connectors/ldap/index.js';
import type { Identity, PasswordConnector } from '../connectors/connector.js';
import { ProblemSink } from '../src/config/problems.js';
import { ACCESS_TOKEN_TTL_S, GRANT_TTL_S, ID_TOKEN_TTL_S, REFRESH_TOKEN_TTL_S } from '../src/idp/lifetimes.js';

const [port = '0', chains = '8', secret = ''] = process.argv.slice(2);
const CLIENT_ID = 'bench';
const SCOPE = 'openid profile email groups offline_access';

const stores = new Map<string, Map<string, AdapterPayload>>();
class MapAdapter implements Adapter {
  private readonly records: Map<string, AdapterPayload>;
  constructor(name: string) {
    this.records = stores.get(name) ?? new Map();
    stores.set(name, this.records);
  }
  upsert(id: string, payload: AdapterPayload): Promise<void> {
    this.records.set(id, { ...payload });
    return Promise.resolve();
  }
  find(id: string): Promise<AdapterPayload | undefined> {
    return Promise.resolve(this.records.get(id));
  }
  findByUid(): Promise<undefined> {
    return Promise.resolve(undefined);
  }
  findByUserCode(): Promise<undefined> {
    return Promise.resolve(undefined);
  }
  consume(id: string): Promise<void> {
    const record = this.records.get(id);
    if (record !== undefined) record.consumed = Math.floor(Date.now() / 1000);
    return Promise.resolve();
  }
  destroy(id: string): Promise<void> {
    this.records.delete(id);
    return Promise.resolve();
  }
  revokeByGrantId(): Promise<void> {
    return Promise.resolve();
  }
}

/** svc's deadline on a connector's refresh (src/idp/provider.ts's REFRESH_TIMEOUT_MS, not exported). */
const REFRESH_TIMEOUT_MS = 15_000;

/** BENCH_BARE_LDAP: the LDAP connector and each user's identity as a login gave it; undefined for the provider alone. */
async function directory(): Promise<{ connector: PasswordConnector; identities: Identity[] } | undefined> {
  const raw = process.env['BENCH_BARE_LDAP'];
  if (raw === undefined || raw === '') return undefined;
  const { config, users } = JSON.parse(raw) as { config: unknown; users: [string, string][] };
  const sink = new ProblemSink();
  const build = ldapType.parse({ raw: config, secrets: new Map(), at: sink.scoped('bench', ['ldap']) });
  if (build === undefined) throw new Error(`BENCH_BARE_LDAP: the LDAP config is refused: ${JSON.stringify(sink.problems)}`);
  const connector = build({ log: pino({ level: 'error' }), now: () => new Date(), upstreamFetch: () => fetch }) as PasswordConnector;
  const identities: Identity[] = [];
  for (const [name, password] of users) {
    const identity = await connector.login(name, password, { callbackUrl: `${issuer}/callback`, wantGroups: true, signal: AbortSignal.timeout(15_000) });
    if (identity === null) throw new Error(`BENCH_BARE_LDAP: ${name} cannot log in to the directory`);
    identities.push(identity);
  }
  if (identities.length === 0) throw new Error('BENCH_BARE_LDAP: no users');
  return { connector, identities };
}

const fixedClaims = (sub: string) => ({ sub, email: 'alice@example.org', email_verified: true, name: 'Alice', preferred_username: 'alice', groups: ['admins', 'devs'] });

/** The provider alone: fixed claims. The floor: the directory asked at each refresh grant, as svc's findAccount does. */
function findAccount(ldap: Awaited<ReturnType<typeof directory>>): FindAccount {
  if (ldap === undefined) return (_ctx, sub) => ({ accountId: sub, claims: () => fixedClaims(sub) });
  const { connector, identities } = ldap;
  const refresh = connector.refresh?.bind(connector);
  if (refresh === undefined) throw new Error('the LDAP connector cannot refresh');
  return async (_ctx, sub, token) => {
    let identity = identities[Number(/(\d+)$/.exec(sub)?.[1] ?? 0) % identities.length] as Identity;
    if (token?.kind === 'RefreshToken') {
      const deadline = new AbortController();
      const timer = setTimeout(() => deadline.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')), REFRESH_TIMEOUT_MS);
      try {
        const fresh = await refresh(identity, { callbackUrl: `${issuer}/callback`, wantGroups: true, signal: deadline.signal });
        if (fresh === null) return undefined;
        identity = fresh;
      } finally {
        clearTimeout(timer);
      }
    }
    const claims = { sub, email: identity.email, email_verified: identity.emailVerified, name: identity.username, preferred_username: identity.preferredUsername, groups: identity.groups };
    return { accountId: sub, claims: () => claims };
  };
}

const key = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });
const issuer = `http://127.0.0.1:${port}`;
const ldap = await directory();
const provider = new Provider(issuer, {
  adapter: MapAdapter,
  clients: [{ client_id: CLIENT_ID, client_secret: secret, redirect_uris: [`${issuer}/callback`], grant_types: ['authorization_code', 'refresh_token'] }],
  jwks: { keys: [{ ...key, kid: 'bench', use: 'sig', alg: 'RS256' }] },
  scopes: SCOPE.split(' '),
  claims: { email: ['email', 'email_verified'], profile: ['name', 'preferred_username'], groups: ['groups'] },
  conformIdTokenClaims: false,
  findAccount: findAccount(ldap),
  issueRefreshToken: () => true,
  rotateRefreshToken: true,
  ttl: { AccessToken: ACCESS_TOKEN_TTL_S, IdToken: ID_TOKEN_TTL_S, Grant: GRANT_TTL_S, RefreshToken: REFRESH_TOKEN_TTL_S },
  features: { devInteractions: { enabled: false } },
});

const client = await provider.Client.find(CLIENT_ID);
if (client === undefined) throw new Error('the bench client is missing');
const tokens: string[] = [];
for (let i = 0; i < Number(chains); i++) {
  const grant = new provider.Grant({ accountId: `user-${i}`, clientId: CLIENT_ID });
  grant.addOIDCScope(SCOPE);
  const grantId = await grant.save();
  tokens.push(await new provider.RefreshToken({ accountId: `user-${i}`, client, grantId, scope: SCOPE, gty: 'authorization_code' }).save());
}
provider.listen(Number(port), () => console.log(JSON.stringify(tokens)));
process.once('SIGTERM', () => process.exit(0));
