/**
 * The exchange pipeline on its own (memory state, the real login throttle, keys in memory):
 * the lifetime rule, the throttle's lockout of one workload identity (and of an address, for
 * failures before the signature holds), an issuer outage that counts nothing, the replay mark
 * (by signature bytes, for as long as the token can be accepted), and the token it issues
 * being a workload token.
 */
import { createHash } from 'node:crypto';
import { expect } from 'chai';
import { base64url, createLocalJWKSet } from 'jose';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { TooManyAttempts, Unavailable } from '../../src/errors.js';
import { CLOCK_SKEW_SECONDS } from '../../src/oidc/sso-verifier.js';
import { createLoginThrottle } from '../../src/session/throttle.js';
import { createMemoryState } from '../../src/state/memory.js';
import { StateUnavailable, type StateBackend } from '../../src/state/state.js';
import { parseTemplate, type Template } from '../../src/workload/claim-path.js';
import type { WorkloadIssuer } from '../../src/workload/config.js';
import { createExchange, GRANT_TYPE_TOKEN_EXCHANGE, TOKEN_TYPE_ACCESS_TOKEN, TOKEN_TYPE_ID_TOKEN, TOKEN_TYPE_JWT, UnsupportedGrantType, type Exchange, type ExchangeRequest } from '../../src/workload/exchange.js';
import type { IssuerKeys } from '../../src/workload/keys.js';
import { createWorkloadTokens } from '../../src/workload/tokens.js';
import { signatureBytes, WorkloadRefused } from '../../src/workload/verify.js';
import { makeSigningKey, signToken, type SigningKey } from '../helpers/fake-oidc-keys.js';

const ISSUER = 'https://ci.example';

describe('workload token exchange pipeline', () => {
  let key: SigningKey;
  let state: StateBackend;
  let now: number;
  let issuerDown: boolean;
  let exchange: Exchange;
  let lines: { level: string; obj: Record<string, unknown>; msg: string }[];
  let recorded: string[];
  let delays: number;
  /** Builds the exchange over `over` (the memory state by default), with or without an outcome counter. */
  let build: (over?: StateBackend, withOutcomes?: boolean) => Exchange;
  const entry: WorkloadIssuer = {
    name: 'ci', issuer: ISSUER, audiences: ['svc'], claims: [], subject: parseTemplate('{{sub}}') as Template, groups: [{ claim: ['groups'], source: 'groups' }], maxTokenLifetimeMs: 600_000,
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
    lines = [];
    recorded = [];
    delays = 0;
    const log = {
      info: (obj: object, msg?: string) => void lines.push({ level: 'info', obj: obj as Record<string, unknown>, msg: msg ?? '' }),
      warn: (obj: object, msg?: string) => void lines.push({ level: 'warn', obj: obj as Record<string, unknown>, msg: msg ?? '' }),
    };
    const outcomes = { record: (method: string, connector: string, reason: string) => void recorded.push(`${method} ${connector} ${reason}`) };
    build = (over = state, withOutcomes = true) => createExchange({
      issuers: () => [entry], keysOf: () => keys, tokens, state: over, throttle, localAccounts: () => new Map([['alice', {}]]), log, now: () => now,
      failureDelay: () => Promise.resolve(void delays++), ...(withOutcomes ? { outcomes } : {}),
    });
    exchange = build();
  });
  afterEach(() => state.close());

  const subjectToken = (claims: Record<string, unknown> = {}) => {
    const t = Math.floor(now / 1000);
    return signToken(key, { iss: ISSUER, sub: 'job-1', aud: 'svc', iat: t, exp: t + 300, ...claims });
  };
  const request = (subject: string, clientIp = '192.0.2.10') => ({ grantType: GRANT_TYPE_TOKEN_EXCHANGE, subjectToken: subject, subjectTokenType: TOKEN_TYPE_JWT, requestedTokenType: undefined, actorToken: undefined, clientIp });

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

  it('marks a token without jti, and refuses it the second time', async () => {
    const token = await subjectToken();
    await exchange(request(token));
    const again = await exchange(request(token)).catch((e: unknown) => e);
    expect(again).to.be.instanceOf(WorkloadRefused);
    expect((again as WorkloadRefused).check).to.equal('replay');
  });

  it('counts failures before the signature holds under the caller\'s address: 10 tokens signed with a stranger\'s key for a victim sub lock no workload', async () => {
    const stranger = await makeSigningKey('k1');
    const t = Math.floor(now / 1000);
    for (let i = 0; i < 10; i++) {
      const forged = await signToken(stranger, { iss: ISSUER, sub: 'job-1', aud: 'svc', iat: t, exp: t + 300, jti: `forged-${i}` });
      const err = await exchange(request(forged, '203.0.113.66')).catch((e: unknown) => e);
      expect(err, `forgery ${i + 1}`).to.satisfy((e: unknown) => e instanceof TooManyAttempts || (e instanceof WorkloadRefused && e.check === 'signature'));
    }
    expect((await exchange(request(await subjectToken(), '192.0.2.10'))).username, 'the real workload still exchanges').to.equal('workload:ci:job-1');
    // The forger's own address is what it locked, even for a token that would verify.
    const fromForger = await exchange(request(await subjectToken({ sub: 'job-2' }), '203.0.113.66')).catch((e: unknown) => e);
    expect(fromForger).to.be.instanceOf(TooManyAttempts);
    expect((fromForger as Error).message).to.match(/^too many refused subject tokens from this address; try again in \d+s$/);
  });

  it('counts failures after the signature holds under the signed sub, and a valid token from an address does not clear that address\'s failures', async () => {
    const stranger = await makeSigningKey('k1');
    const t = Math.floor(now / 1000);
    const forged = await signToken(stranger, { iss: ISSUER, sub: 'job-9', aud: 'svc', iat: t, exp: t + 300 });
    expect(await exchange(request(forged, '203.0.113.7')).catch((e: unknown) => e)).to.be.instanceOf(WorkloadRefused);
    expect((await exchange(request(await subjectToken({ sub: 'job-3' }), '203.0.113.7'))).username).to.equal('workload:ci:job-3');
    expect(await exchange(request(forged, '203.0.113.7')).catch((e: unknown) => e), 'second forgery: the allowance of 2').to.be.instanceOf(WorkloadRefused);
    expect(await exchange(request(await subjectToken({ sub: 'job-4' }), '203.0.113.7')).catch((e: unknown) => e), 'the address is locked').to.be.instanceOf(TooManyAttempts);
  });

  it('refuses a respelt token without jti as a replay: the mark is the signature\'s bytes, not its text', async () => {
    const token = await subjectToken();
    const respelt = respellings(token);
    expect(respelt.length, 'spellings of the last character that decode to the same signature').to.be.above(0);
    await exchange(request(token));
    const answers = await respelt.reduce<Promise<unknown[]>>(async (done, other) => [...(await done), await exchange(request(other, '198.51.100.1')).catch((e: unknown) => e)], Promise.resolve([]));
    // The first is refused as a replay; the replays then lock job-1 (allowance 2): none is exchanged.
    expect((answers[0] as WorkloadRefused).check).to.equal('replay');
    for (const answer of answers) expect(answer).to.satisfy((e: unknown) => (e instanceof WorkloadRefused && e.check === 'replay') || e instanceof TooManyAttempts);
  });

  it('keeps the replay mark until the token can no longer be accepted: its exp plus the clock skew', async () => {
    const token = await subjectToken();
    const exp = Math.floor(now / 1000) + 300;
    await exchange(request(token));
    now = (exp + CLOCK_SKEW_SECONDS - 1) * 1000;
    const again = await exchange(request(token)).catch((e: unknown) => e);
    expect(again, 'one second before the token stops being accepted').to.be.instanceOf(WorkloadRefused);
    expect((again as WorkloadRefused).check).to.equal('replay');
    now = (exp + CLOCK_SKEW_SECONDS) * 1000;
    const late = await exchange(request(token)).catch((e: unknown) => e);
    expect((late as WorkloadRefused).check, 'expired with the skew: refused for that, the mark no longer needed').to.equal('exp');
  });

  it('refuses a request of another shape before reading its token, naming what is wrong', async () => {
    const token = await subjectToken();
    const cases: [Partial<ExchangeRequest>, string][] = [
      [{ grantType: 'password' }, `grant_type must be ${GRANT_TYPE_TOKEN_EXCHANGE}`],
      [{ grantType: undefined }, `grant_type must be ${GRANT_TYPE_TOKEN_EXCHANGE}`],
      [{ subjectToken: undefined }, "check 'request' failed: subject_token is required"],
      [{ subjectToken: '' }, "check 'request' failed: subject_token is required"],
      [{ subjectTokenType: undefined }, `check 'request' failed: subject_token_type must be ${TOKEN_TYPE_JWT} or ${TOKEN_TYPE_ID_TOKEN}`],
      [{ subjectTokenType: TOKEN_TYPE_ACCESS_TOKEN }, `check 'request' failed: subject_token_type must be ${TOKEN_TYPE_JWT} or ${TOKEN_TYPE_ID_TOKEN}`],
      [{ requestedTokenType: TOKEN_TYPE_JWT }, `check 'request' failed: requested_token_type can only be ${TOKEN_TYPE_ACCESS_TOKEN}`],
      [{ actorToken: token }, "check 'request' failed: actor_token is not supported (no delegation)"],
    ];
    for (const [change, message] of cases) {
      const err = await exchange({ ...request(token), ...change }).catch((e: unknown) => e);
      expect((err as Error).message, JSON.stringify(change)).to.equal(message);
    }
    expect(await exchange({ ...request(token), grantType: 'password' }).catch((e: unknown) => e)).to.be.instanceOf(UnsupportedGrantType);
    expect((await exchange({ ...request(token), subjectTokenType: TOKEN_TYPE_ID_TOKEN, requestedTokenType: TOKEN_TYPE_ACCESS_TOKEN })).username).to.equal('workload:ci:job-1');
  });

  it('logs and counts each refusal with its check, the claimed sub and the address; a pass with its user, groups and expiry; a dropped group at warn', async () => {
    const t = Math.floor(now / 1000);
    await exchange(request(await subjectToken({ aud: 'other' }), '192.0.2.77')).catch(() => undefined);
    expect(lines).to.deep.equal([{ level: 'info', obj: { entry: 'ci', check: 'aud', reason: "check 'aud' failed: the token's audience is none of those workload issuer 'ci' accepts", sub: 'job-1', clientIp: '192.0.2.77' }, msg: 'workload token exchange refused' }]);
    expect(recorded).to.deep.equal(['workload ci invalid-token']);
    const stranger = await makeSigningKey('k1');
    await exchange(request(await signToken(stranger, { iss: ISSUER, sub: 'x'.repeat(100), aud: 'svc', iat: t, exp: t + 60 }))).catch(() => undefined);
    expect(lines.at(-1)?.obj).to.include({ check: 'signature', sub: `${'x'.repeat(80)}…` });
    lines.length = 0;
    recorded.length = 0;
    const result = await exchange(request(await subjectToken({ sub: 'job-7', groups: ['deployers', 'alice'] })));
    expect(lines.map((l) => [l.level, l.msg])).to.deep.equal([['warn', "workload group 'alice' dropped: it is the name of the local account 'alice'"], ['info', 'workload token exchanged']]);
    expect(lines[0]?.obj).to.deep.equal({ entry: 'ci', username: 'workload:ci:job-7', group: 'alice' });
    const claims = await tokens.verify(result.accessToken);
    expect(lines[1]?.obj).to.deep.equal({ entry: 'ci', username: 'workload:ci:job-7', groups: ['deployers'], jti: claims.jti, expiresAt: t + 600 });
    expect(recorded).to.deep.equal(['workload ci ok']);
    const token = await subjectToken({ sub: 'job-8' });
    await exchange(request(token));
    await exchange(request(token)).catch(() => undefined);
    expect(recorded.at(-1)).to.equal('workload ci refused');
  });

  it('clears a workload identity\'s failures on its success, and does not count a refused address\'s attempt under any identity', async () => {
    expect(await exchange(request(await subjectToken({ aud: 'other' }))).catch((e: unknown) => e)).to.be.instanceOf(WorkloadRefused);
    await exchange(request(await subjectToken()));
    for (let i = 0; i < 2; i++) expect(await exchange(request(await subjectToken({ aud: 'other' }))).catch((e: unknown) => e), `failure ${i + 1} after the success`).to.be.instanceOf(WorkloadRefused);
    expect(await exchange(request(await subjectToken())).catch((e: unknown) => e), 'the two since the success lock it').to.be.instanceOf(TooManyAttempts);
  });

  it('names the RFC 8693 parameters as the RFC spells them', () => {
    expect([GRANT_TYPE_TOKEN_EXCHANGE, TOKEN_TYPE_JWT, TOKEN_TYPE_ID_TOKEN, TOKEN_TYPE_ACCESS_TOKEN]).to.deep.equal([
      'urn:ietf:params:oauth:grant-type:token-exchange', 'urn:ietf:params:oauth:token-type:jwt', 'urn:ietf:params:oauth:token-type:id_token', 'urn:ietf:params:oauth:token-type:access_token',
    ]);
  });

  it('keeps the replay mark under the issuer and the jti (else the signature), hashed, for exp plus the skew', async () => {
    const t = Math.floor(now / 1000);
    const sha = (text: string) => createHash('sha256').update(text).digest('base64url');
    await exchange(request(await subjectToken({ jti: 'run-42' })));
    const byJti = `workload-exchanged:${sha(`${ISSUER}\njti:run-42`)}`;
    expect(await state.ttlMs(byJti)).to.equal((t + 300 + CLOCK_SKEW_SECONDS) * 1000 - now);
    const token = await subjectToken({ sub: 'job-5', jti: '' });
    await exchange(request(token));
    const bySignature = `workload-exchanged:${sha(`${ISSUER}\nsignature:${signatureBytes(token)}`)}`;
    expect(await state.get(bySignature)).to.equal(String(now));
    const again = await exchange(request(token)).catch((e: unknown) => e);
    expect((again as Error).message).to.equal("check 'replay' failed: this subject token was exchanged before; a subject token is exchanged at most once");
  });

  it('counts under `exchange-from:<entry>:<address>` before the signature and `exchange:<entry>:<hash of sub>` after, each refusal waiting once', async () => {
    const t = Math.floor(now / 1000);
    const stranger = await makeSigningKey('k1');
    await exchange(request(await signToken(stranger, { iss: ISSUER, sub: 'job-1', aud: 'svc', iat: t, exp: t + 60 }), '203.0.113.9')).catch(() => undefined);
    expect(await state.get('login-failures:exchange-from:ci:203.0.113.9')).to.equal('1');
    await exchange(request(await subjectToken({ aud: 'other' }))).catch(() => undefined);
    const hashed = createHash('sha256').update('job-1').digest('base64url').slice(0, 22);
    expect(await state.get(`login-failures:exchange:ci:${hashed}`)).to.equal('1');
    await exchange(request(await subjectToken({ sub: 42, aud: 'other' }))).catch(() => undefined);
    const empty = createHash('sha256').update('').digest('base64url').slice(0, 22);
    expect(await state.get(`login-failures:exchange:ci:${empty}`), 'a sub that is no string counts as the empty one').to.equal('1');
    expect(lines.at(-1)?.obj).to.have.property('sub', undefined);
    expect(delays).to.equal(3);
    await exchange(request(await subjectToken({ aud: 'other' }))).catch(() => undefined);
    const locked = await exchange(request(await subjectToken())).catch((e: unknown) => e);
    expect((locked as Error).message, 'a workload\'s lock keeps the login wording, which the route rewrites').to.match(/^too many failed logins; try again in \d+s$/);
  });

  it('answers 503 when the state backend cannot say whether the token was exchanged, and lets any other failure through', async () => {
    const failing = (err: Error): StateBackend => new Proxy(state, { get: (target, prop, receiver) => (prop === 'setIfAbsent' ? () => Promise.reject(err) : Reflect.get(target, prop, receiver) as unknown) });
    const down = await build(failing(new StateUnavailable('redis gone')))(request(await subjectToken())).catch((e: unknown) => e);
    expect(down).to.be.instanceOf(Unavailable);
    expect((down as Error).message).to.equal('the state backend is unreachable: svc cannot tell whether this subject token was exchanged before');
    expect((down as Error).cause).to.be.instanceOf(StateUnavailable);
    const odd = await build(failing(new RangeError('odd')))(request(await subjectToken({ sub: 'job-6' }))).catch((e: unknown) => e);
    expect(odd).to.be.instanceOf(RangeError);
  });

  it('works without an outcome counter', async () => {
    const plain = build(state, false);
    expect(await plain(request(await subjectToken({ aud: 'other' }))).catch((e: unknown) => e)).to.be.instanceOf(WorkloadRefused);
    expect((await plain(request(await subjectToken()))).username).to.equal('workload:ci:job-1');
  });
});

/** The other spellings of a token's last character that decode to the same signature bytes. */
function respellings(token: string): string[] {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  const body = token.slice(0, -1);
  const same = Buffer.from(base64url.decode(token.slice(token.lastIndexOf('.') + 1)));
  return [...alphabet].map((c) => body + c).filter((t) => t !== token && Buffer.from(base64url.decode(t.slice(t.lastIndexOf('.') + 1))).equals(same));
}
