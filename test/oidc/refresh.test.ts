/**
 * When an SSO session is due for renewal (src/oidc/refresh.ts): near its expiry as before, and
 * once its groups are older than users.sso.groupsRecheck; after a try that renewed nothing, not
 * again before RETRY_MS (never on every request). The renewal itself runs against real
 * providers in test/e2e/sso-flow.test.ts and sso-groups-recheck.test.ts.
 */
import { expect } from 'chai';
import { decodeJwt, UnsecuredJWT } from 'jose';
import { pino } from 'pino';
import { NO_AUDIT } from '../../src/audit/trail.js';
import type { ProviderClient } from '../../src/oidc/client.js';
import { createSessionRefresh, MAX_RENEWALS_BEHIND, RETRY_MS } from '../../src/oidc/refresh.js';
import type { SsoVerifier } from '../../src/oidc/sso-verifier.js';
import { createSealer } from '../../src/lib/sealed.js';
import { createMemoryState } from '../../src/state/memory.js';

const ISSUER = 'https://idp.example';
const RECHECK_MS = 300_000;
const T0 = 1_700_000_000;

function token(iat: number, exp: number, iss = ISSUER): string {
  return new UnsecuredJWT({ sub: 'bob' }).setIssuer(iss).setIssuedAt(iat).setExpirationTime(exp).encode();
}

describe('oidc/refresh: when a session is due', function () {
  let now = T0 * 1000;
  const verifier = { verifyIgnoringExpiry: (t: string) => Promise.resolve({ sub: 'bob', exp: T0 + 86_400, tokenId: t.slice(-8), payload: {} }) } as unknown as SsoVerifier;
  const refresh = createSessionRefresh({
    client: { provider: { issuer: ISSUER } } as unknown as ProviderClient, verifier, state: createMemoryState(),
    sealer: () => createSealer('refresh-test-key-0123456789abcdef', 'refresh-token'), keepMs: () => 86_400_000, userInfo: undefined,
    isRevoked: () => Promise.resolve(false), revoke: () => Promise.resolve(), recheckMs: () => RECHECK_MS, audit: NO_AUDIT,
    log: pino({ level: 'silent' }), now: () => now,
  });

  it('is due once its groups are older than the recheck interval, not before', function () {
    now = T0 * 1000;
    const day = token(T0, T0 + 86_400);
    expect(refresh.due(day)).to.equal(false);
    now = T0 * 1000 + RECHECK_MS - 1000;
    expect(refresh.due(day)).to.equal(false);
    now = T0 * 1000 + RECHECK_MS;
    expect(refresh.due(day)).to.equal(true);
    expect(refresh.due(token(T0, T0 + 86_400, 'https://other.example')), 'another issuer').to.equal(false);
  });

  it('is not tried again before RETRY_MS after a try that renewed nothing', async function () {
    now = (T0 + 1000) * 1000 + RECHECK_MS;
    const day = token(T0 + 1000, T0 + 86_400);
    expect(refresh.due(day)).to.equal(true);
    expect(await refresh.renew(day), 'no refresh token kept').to.equal(undefined);
    expect(refresh.due(day)).to.equal(false);
    now += RETRY_MS - 1;
    expect(refresh.due(day)).to.equal(false);
    now += 1;
    expect(refresh.due(day)).to.equal(true);
  });
});

describe('oidc/refresh: a token whose session was renewed since', function () {
  const now = (T0 + 10_000) * 1000;
  const sealer = createSealer('refresh-test-key-0123456789abcdef', 'refresh-token');
  /** A token of the session; its id is its `jti`. */
  const tokenOf = (jti: string, iat: number): string => new UnsecuredJWT({ sub: 'bob', jti }).setIssuer(ISSUER).setIssuedAt(iat).setExpirationTime(T0 + 86_400).encode();
  const verifier = {
    verifyIgnoringExpiry: (t: string) => {
      const payload = decodeJwt(t);
      return Promise.resolve({ sub: 'bob', exp: payload.exp as number, tokenId: payload.jti as string, payload });
    },
  } as unknown as SsoVerifier;

  function setUp() {
    const state = createMemoryState();
    const revoked: string[] = [];
    const refresh = createSessionRefresh({
      client: { provider: { issuer: ISSUER } } as unknown as ProviderClient, verifier, state,
      sealer: () => sealer, keepMs: () => 86_400_000, userInfo: undefined,
      isRevoked: (id) => Promise.resolve(revoked.includes(id)), revoke: (id) => Promise.resolve(void revoked.push(id)), recheckMs: () => RECHECK_MS, audit: NO_AUDIT,
      log: pino({ level: 'silent' }), now: () => now,
    });
    /** As a renewal on any replica leaves it: the session's next token kept for the renewed one. */
    const renewed = (fromJti: string, next: string) => state.set(`sso:renewed:${fromJti}`, sealer.seal(next), { ttlMs: 86_400_000 });
    return { refresh, renewed, revoked };
  }

  it('is due at once and goes on as the session\'s latest token, however many renewals behind (up to the bound)', async function () {
    const { refresh, renewed, revoked } = setUp();
    const first = tokenOf('t1', T0 + 9_000);
    const second = tokenOf('t2', T0 + 9_500);
    const latest = tokenOf('t3', T0 + 9_990);
    await renewed('t1', second);
    await renewed('t2', latest);
    expect(refresh.due(latest), 'the latest is rechecked recently').to.equal(false);
    const got = await refresh.renew(first);
    expect(got?.idToken, 'the session\'s latest token, not a renewal of its own').to.equal(latest);
    expect(refresh.due(first), 'due on every use, not paused by RETRY_MS').to.equal(true);
    expect((await refresh.renew(first))?.idToken).to.equal(latest);
    expect(revoked).to.deep.equal([]);
  });

  it(`ends a token more than ${MAX_RENEWALS_BEHIND} renewals behind its session`, async function () {
    const { refresh, renewed, revoked } = setUp();
    for (let i = 0; i <= MAX_RENEWALS_BEHIND; i++) await renewed(`c${i}`, tokenOf(`c${i + 1}`, T0 + 9_000 + i));
    expect(await refresh.renew(tokenOf('c0', T0 + 9_000))).to.equal(undefined);
    expect(revoked).to.deep.equal(['c0']);
    // One fewer is followed.
    const { refresh: other, renewed: renewedToo, revoked: none } = setUp();
    for (let i = 0; i < MAX_RENEWALS_BEHIND; i++) await renewedToo(`c${i}`, tokenOf(`c${i + 1}`, T0 + 9_000 + i));
    expect((await other.renew(tokenOf('c0', T0 + 9_000)))?.idToken).to.equal(tokenOf(`c${MAX_RENEWALS_BEHIND}`, T0 + 9_000 + MAX_RENEWALS_BEHIND - 1));
    expect(none).to.deep.equal([]);
  });
});
