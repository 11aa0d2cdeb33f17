/**
 * The exchange pipeline on its own (memory state, the real login throttle, keys in memory):
 * the lifetime rule, the throttle's lockout of one workload identity, an issuer outage that
 * counts nothing, and the token it issues being a workload token.
 */
import { expect } from 'chai';
import { createLocalJWKSet } from 'jose';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { TooManyAttempts, Unavailable } from '../../src/errors.js';
import { createLoginThrottle } from '../../src/session/throttle.js';
import { createMemoryState } from '../../src/state/memory.js';
import type { StateBackend } from '../../src/state/state.js';
import { parseTemplate, type Template } from '../../src/workload/claim-path.js';
import type { WorkloadIssuer } from '../../src/workload/config.js';
import { createExchange, GRANT_TYPE_TOKEN_EXCHANGE, TOKEN_TYPE_JWT, type Exchange } from '../../src/workload/exchange.js';
import type { IssuerKeys } from '../../src/workload/keys.js';
import { createWorkloadTokens } from '../../src/workload/tokens.js';
import { WorkloadRefused } from '../../src/workload/verify.js';
import { makeSigningKey, signToken, type SigningKey } from '../helpers/fake-oidc-keys.js';

const ISSUER = 'https://ci.example';

describe('workload token exchange pipeline', () => {
  let key: SigningKey;
  let state: StateBackend;
  let now: number;
  let issuerDown: boolean;
  let exchange: Exchange;
  const entry: WorkloadIssuer = {
    name: 'ci', issuer: ISSUER, audiences: ['svc'], claims: [], subject: parseTemplate('{{sub}}') as Template, groups: [], maxTokenLifetimeMs: 600_000,
  };
  const tokens = createWorkloadTokens({ secretKey: () => 'k'.repeat(32), now: () => now });

  before(async () => {
    key = await makeSigningKey('k1');
  });
  beforeEach(() => {
    now = Date.now();
    issuerDown = false;
    state = createMemoryState({ now: () => now });
    const lookup = createLocalJWKSet({ keys: [key.publicJwk] });
    const keys: IssuerKeys = {
      algorithms: () => (issuerDown ? Promise.reject(new Unavailable('issuer down')) : Promise.resolve(['RS256'])),
      keyFor: async (header) => ({ key: await lookup(header) }),
    };
    const throttle = createLoginThrottle({ state, limits: { maxFailCount: 2, windowSeconds: 300, maxCacheSize: 100, maxConcurrentLogins: 0 }, log: pino({ level: 'silent' }), registry: new Registry(), now: () => now, maxWaitMs: 0 });
    exchange = createExchange({
      issuers: () => [entry], keysOf: () => keys, tokens, state, throttle, localAccounts: () => new Map(), log: pino({ level: 'silent' }), now: () => now, failureDelay: () => Promise.resolve(),
    });
  });
  afterEach(() => state.close());

  const subjectToken = (claims: Record<string, unknown> = {}) => {
    const t = Math.floor(now / 1000);
    return signToken(key, { iss: ISSUER, sub: 'job-1', aud: 'svc', iat: t, exp: t + 300, ...claims });
  };
  const request = (subject: string) => ({ grantType: GRANT_TYPE_TOKEN_EXCHANGE, subjectToken: subject, subjectTokenType: TOKEN_TYPE_JWT, requestedTokenType: undefined, actorToken: undefined });

  it('issues a workload token for at most maxTokenLifetime, and never past the subject token\'s expiry plus it', async () => {
    const fresh = await exchange(request(await subjectToken()));
    expect(fresh.expiresIn).to.equal(600);
    expect(fresh.username).to.equal('workload:ci:job-1');
    const claims = await tokens.verify(fresh.accessToken);
    expect(claims).to.include({ username: 'workload:ci:job-1', entry: 'ci' });
    // Expired 20 s ago, within the clock skew: accepted, but its svc token ends 20 s earlier.
    const t = Math.floor(now / 1000);
    const late = await exchange(request(await subjectToken({ sub: 'job-2', iat: t - 400, exp: t - 20 })));
    expect(late.expiresIn).to.equal(580);
  });

  it('locks one workload identity after its failures, as a login locks a name; others still pass', async () => {
    for (let i = 0; i < 2; i++) {
      const err = await exchange(request(await subjectToken({ aud: 'other' }))).catch((e: unknown) => e);
      expect(err).to.be.instanceOf(WorkloadRefused);
    }
    const locked = await exchange(request(await subjectToken())).catch((e: unknown) => e);
    expect(locked).to.be.instanceOf(TooManyAttempts);
    expect((await exchange(request(await subjectToken({ sub: 'job-other' })))).username).to.equal('workload:ci:job-other');
  });

  it('counts nothing when the issuer cannot be reached: the token could not be checked', async () => {
    issuerDown = true;
    for (let i = 0; i < 4; i++) expect(await exchange(request(await subjectToken())).catch((e: unknown) => e)).to.be.instanceOf(Unavailable);
    issuerDown = false;
    expect((await exchange(request(await subjectToken()))).username).to.equal('workload:ci:job-1');
  });

  it('marks a token without jti by its hash, and refuses it the second time', async () => {
    const token = await subjectToken();
    await exchange(request(token));
    const again = await exchange(request(token)).catch((e: unknown) => e);
    expect(again).to.be.instanceOf(WorkloadRefused);
    expect((again as WorkloadRefused).check).to.equal('replay');
  });
});
