/**
 * Groups from the provider's userinfo endpoint (enableUserInfoGroups): read at login and again
 * when the cache expires, cached per session (the token's id, so never someone else's) in the
 * state backend, sealed with a key derived from server.secretkey. The cache lives as long as
 * userInfoCacheExpiration allows and never past the ID token. An endpoint that is down gives no
 * groups once the cached ones expired, and is asked again a little later; it never fails a request.
 */
import type { Logger } from 'pino';
import type { StateBackend } from '../state/state.js';
import type { ProviderClient } from './client.js';
import type { Sealer } from '../lib/sealed.js';
import type { GroupSource, VerifiedClaims } from './sso-verifier.js';

const GROUPS_KEY = (tokenId: string): string => `sso:userinfo:${tokenId}`;
const ACCESS_KEY = (tokenId: string): string => `sso:access:${tokenId}`;
/** After a failed read: how long "no groups" holds before the endpoint is asked again. */
const RETRY_MS = 30_000;

export interface UserInfoGroupsDeps {
  readonly client: ProviderClient;
  readonly state: StateBackend;
  readonly sealer: () => Sealer;
  readonly log: Pick<Logger, 'warn'>;
  readonly now: () => number;
}

export interface UserInfoGroups {
  /** At login: keeps the access token for later reads and reads the groups once. */
  remember(claims: VerifiedClaims, accessToken: string): Promise<void>;
  readonly source: GroupSource;
}

export function createUserInfoGroups(deps: UserInfoGroupsDeps): UserInfoGroups {
  const { provider } = deps.client;
  const info = provider.userInfo;
  if (info === undefined) throw new Error('userinfo groups need enableUserInfoGroups and userInfoPath');
  const userInfoUrl = `${provider.issuer.replace(/\/$/, '')}${info.path}`;

  const lifeMs = (claims: VerifiedClaims): number => claims.exp * 1000 - deps.now();
  const cacheMs = (claims: VerifiedClaims): number => Math.min(info.cacheMs ?? Infinity, lifeMs(claims));

  async function fetchGroups(claims: VerifiedClaims, accessToken: string): Promise<readonly string[] | undefined> {
    try {
      const res = await deps.client.fetch(userInfoUrl, { headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json' } });
      if (!res.ok) throw new Error(`status ${res.status}`);
      const body = (await res.json()) as Record<string, unknown>;
      // A userinfo answer about another subject is never taken for this one.
      if (body['sub'] !== claims.sub) throw new Error('the userinfo subject is not the token subject');
      const groups = body['groups'];
      return Array.isArray(groups) ? groups.filter((g): g is string => typeof g === 'string') : [];
    } catch (err: unknown) {
      deps.log.warn({ issuer: provider.issuer, reason: (err as Error).message }, 'userinfo groups cannot be read; the user has no userinfo groups until they can');
      return undefined;
    }
  }

  async function store(claims: VerifiedClaims, groups: readonly string[]): Promise<number> {
    const ttl = Math.floor(cacheMs(claims));
    if (ttl > 0) await deps.state.set(GROUPS_KEY(claims.tokenId), deps.sealer().seal(JSON.stringify(groups)), { ttlMs: ttl });
    return deps.now() + Math.max(ttl, 0);
  }

  return {
    async remember(claims, accessToken) {
      const ttl = Math.floor(lifeMs(claims));
      if (ttl <= 0) return;
      await deps.state.set(ACCESS_KEY(claims.tokenId), deps.sealer().seal(accessToken), { ttlMs: ttl });
      const groups = await fetchGroups(claims, accessToken);
      if (groups !== undefined) await store(claims, groups);
    },

    async source(claims) {
      const cached = await deps.state.get(GROUPS_KEY(claims.tokenId));
      const opened = cached === null ? undefined : deps.sealer().open(cached);
      if (opened !== undefined) {
        const ttl = (await deps.state.ttlMs(GROUPS_KEY(claims.tokenId))) ?? 0;
        return { groups: JSON.parse(opened) as string[], untilMs: deps.now() + ttl };
      }
      const sealedAccess = await deps.state.get(ACCESS_KEY(claims.tokenId));
      const accessToken = sealedAccess === null ? undefined : deps.sealer().open(sealedAccess);
      const groups = accessToken === undefined ? undefined : await fetchGroups(claims, accessToken);
      if (groups === undefined) return { groups: [], untilMs: deps.now() + RETRY_MS };
      return { groups, untilMs: await store(claims, groups) };
    },
  };
}
