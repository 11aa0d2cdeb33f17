/**
 * When an SSO session is due for renewal (src/oidc/refresh.ts): near its expiry as before, and
 * once its groups are older than users.sso.groupsRecheck; after a try that renewed nothing, not
 * again before RETRY_MS (never on every request). The renewal itself runs against real
 * providers in test/e2e/sso-flow.test.ts and sso-groups-recheck.test.ts.
 */
import { expect } from 'chai';
import { UnsecuredJWT } from 'jose';
import { pino } from 'pino';
import { NO_AUDIT } from '../../src/audit/trail.js';
import type { ProviderClient } from '../../src/oidc/client.js';
import { createSessionRefresh, RETRY_MS } from '../../src/oidc/refresh.js';
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
