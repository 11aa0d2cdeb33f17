/**
 * CPU per refresh grant of svc's own storage work, without HTTP, the provider, the signature or
 * the directory: the state adapter's calls and the account record's, in the order oidc-provider
 * makes them for one refresh grant (found by counting them under bench/sso-login.ts: the refresh
 * token's look-up and consume, the grant's look-up, the account's look-up and its life kept, the
 * new refresh and access tokens saved), on the in-memory backend. The same sequence runs against
 * two builds (their compiled `dist/`) in interleaved rounds, so a change to sealing, refs or the
 * adapter shows as µs per grant, steadier than the whole bench's rates on a shared host.
 *
 * Usage: npx tsx bench/refresh-storage-cpu.ts [--grants 20000] [--rounds 5] ROOT [OTHER_ROOT ...]
 *   (ROOT: a checkout or copy with a built dist/; `.` is this one, after `npm run build`)
 */
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import type { AdapterConstructor, AdapterPayload } from 'oidc-provider';

const { values: opts, positionals: roots } = parseArgs({
  options: { grants: { type: 'string', default: '20000' }, rounds: { type: 'string', default: '5' } },
  allowPositionals: true,
});
const GRANTS = Number(opts.grants);
const ROUNDS = Number(opts.rounds);
const SECRET = 'refresh-storage-bench-secret-0123456789';
const CHAINS = 8;
const REFRESHES_PER_CHAIN = 400;

interface Build {
  readonly name: string;
  readonly run: () => Promise<void>;
}

type AccountStore = { find(sub: string): Promise<unknown>; update(sub: string, previous: unknown, next: unknown, ttlS: number): Promise<void>; save(sub: string, account: unknown, ttlS: number): Promise<void> };

async function load(root: string): Promise<Build> {
  const dist = (path: string) => import(pathToFileURL(resolve(root, 'dist', path)).href);
  const { createMemoryState } = await dist('src/state/memory.js');
  const { createStateAdapterClass } = await dist('src/idp/storage/adapter.js');
  const { createAccountStore, REMEMBERED_ACCOUNTS } = await dist('src/idp/storage/federated-accounts.js');
  const { createSealer } = await dist('src/lib/sealed.js');
  const state = createMemoryState();
  const Adapter = createStateAdapterClass(state, { serverSecretKey: SECRET }) as AdapterConstructor;
  // As src/main/idp.ts makes it in each build (an older build ignores the option).
  const accounts = createAccountStore(state, createSealer(SECRET, 'idp-account', { rememberOpened: REMEMBERED_ACCOUNTS })) as AccountStore;
  const refreshTokens = new Adapter('RefreshToken');
  const accessTokens = new Adapter('AccessToken');
  const grants = new Adapter('Grant');
  const id = () => randomBytes(32).toString('base64url').slice(0, 43);
  const identity = { userId: 'alice', username: 'alice', email: 'alice@example.org', emailVerified: true, groups: ['admins', 'devs'], connectorData: '{"dn":"uid=alice,ou=people,dc=example,dc=org","username":"alice"}' };
  const token = (grantId: string, sub: string): AdapterPayload => ({
    kind: 'RefreshToken', jti: id(), accountId: sub, grantId, clientId: 'svc', scope: 'openid email profile groups offline_access', gty: 'authorization_code refresh_token', iat: 1, exp: 2, expiresWithSession: false, sessionUid: 'u', rotations: 1,
  });
  /** A new login's grant and first refresh token (a grant lists at most 1,000 tokens, as in bench/sso-login.ts). */
  async function login(sub: string): Promise<{ sub: string; grantId: string; current: string; used: number }> {
    const grantId = id();
    await grants.upsert(grantId, { kind: 'Grant', jti: grantId, accountId: sub, clientId: 'svc', openid: { scope: 'openid email profile groups offline_access' } }, 3600);
    const first = token(grantId, sub);
    await refreshTokens.upsert(first.jti as string, first, 3600);
    return { sub, grantId, current: first.jti as string, used: 0 };
  }
  const chains = await Promise.all(Array.from({ length: CHAINS }, async (_, i) => {
    await accounts.save(`sub-${i}`, { connectorId: 'corp', identity }, 3600);
    return login(`sub-${i}`);
  }));
  let next = 0;
  async function grant(): Promise<void> {
    const at = next++ % CHAINS;
    if (chains[at]!.used++ === REFRESHES_PER_CHAIN) chains[at] = await login(chains[at]!.sub);
    const chain = chains[at]!;
    const found = await refreshTokens.find(chain.current);
    if (found === undefined) throw new Error('the refresh token was not found');
    await grants.find(chain.grantId);
    const account = await accounts.find(chain.sub);
    await accounts.update(chain.sub, account, account, 3600);
    await refreshTokens.consume(chain.current);
    const fresh = token(chain.grantId, chain.sub);
    await refreshTokens.upsert(fresh.jti as string, fresh, 3600);
    const access = id();
    await accessTokens.upsert(access, { kind: 'AccessToken', jti: access, accountId: chain.sub, grantId: chain.grantId, clientId: 'svc', scope: 'openid', iat: 1, exp: 2 }, 600);
    chain.current = fresh.jti as string;
  }
  return {
    name: root,
    run: async () => {
      for (let i = 0; i < GRANTS; i++) await grant();
    },
  };
}

const builds = await Promise.all((roots.length > 0 ? roots : ['.']).map(load));
for (const build of builds) await build.run(); // warm up
const results = new Map<string, number[]>(builds.map((b) => [b.name, []]));
console.log(`# ${new Date().toISOString()} ${GRANTS} grants per round, ${ROUNDS} rounds, load average ${(await import('node:os')).loadavg().map((l) => l.toFixed(1)).join(' ')}`);
for (let round = 1; round <= ROUNDS; round++) {
  for (const build of builds) {
    const start = process.cpuUsage();
    await build.run();
    const used = process.cpuUsage(start);
    const perGrant = (used.user + used.system) / GRANTS;
    results.get(build.name)?.push(perGrant);
    console.log(`round ${round}  ${build.name.padEnd(28)} ${perGrant.toFixed(1).padStart(7)} µs CPU per grant`);
  }
}
const median = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)] ?? NaN;
for (const [name, list] of results) console.log(`median ${name.padEnd(28)} ${median(list).toFixed(1).padStart(7)} µs CPU per grant`);
