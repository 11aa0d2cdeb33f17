/** LoginService: equal timing, the failure delay, lockout without a password check, the cap. */
import bcrypt from 'bcrypt';
import { expect } from 'chai';
import { pino, type Logger } from 'pino';
import { Registry } from 'prom-client';
import type { AccountSettings } from '../../src/accounts/config.js';
import { BCRYPT_COST } from '../../src/accounts/passwords.js';
import { SecondFactorRequired } from '../../src/errors.js';
import { createLoginConcurrency } from '../../src/session/concurrency.js';
import { createLoginService, FAILURE_DELAY_MAX_MS, FAILURE_DELAY_MIN_MS, type LoginService } from '../../src/session/login.js';
import { createLoginThrottle } from '../../src/session/throttle.js';
import { createTokenSigner } from '../../src/session/tokens.js';
import { createMemoryState } from '../../src/state/memory.js';

const log = pino({ level: 'silent' });

function accounts(hash: string): ReadonlyMap<string, AccountSettings> {
  return new Map([['alice', { name: 'alice', enabled: true, capabilities: ['login'], tokens: [], passwordHash: hash }]]);
}

async function failure(promise: Promise<unknown>): Promise<{ code?: string; message?: string }> {
  try {
    await promise;
  } catch (err: unknown) {
    return err as { code?: string; message?: string };
  }
  throw new Error('expected a failure');
}

describe('LoginService', function () {
  let hash: string;
  const state = createMemoryState();
  let bcryptCalls = 0;
  const realCompare = bcrypt.compare;

  before(async function () {
    hash = await bcrypt.hash('right-password', BCRYPT_COST);
  });
  after(() => state.close());

  /** `delay: 'default'` leaves failureDelay out, so the service uses its own default. */
  function service(options: { maxConcurrent?: number; maxFailCount?: number; delay?: (() => Promise<void>) | 'default'; log?: Logger } = {}): LoginService {
    const limits = { maxFailCount: options.maxFailCount ?? 2, windowSeconds: 300, maxCacheSize: 1000, maxConcurrentLogins: 50 };
    const delay = options.delay ?? (async () => undefined);
    return createLoginService({
      accounts: () => accounts(hash),
      throttle: createLoginThrottle({ state, limits, log, registry: new Registry(), now: Date.now }),
      concurrency: createLoginConcurrency(options.maxConcurrent ?? 50),
      signer: createTokenSigner({ secretKey: () => 'k'.repeat(32), now: Date.now }),
      sessionDurationMs: () => 3_600_000,
      log: options.log ?? log,
      now: Date.now,
      ...(delay === 'default' ? {} : { failureDelay: delay }),
    });
  }

  async function timed(fn: () => Promise<unknown>): Promise<number> {
    const start = performance.now();
    await fn().catch(() => undefined);
    return performance.now() - start;
  }

  it('takes the same time for an unknown user as for a wrong password (one bcrypt each)', async function () {
    this.timeout(30_000);
    const login = service();
    const samples = { unknown: [] as number[], wrong: [] as number[] };
    for (let i = 0; i < 6; i++) {
      samples.unknown.push(await timed(() => login.withPassword({ username: `ghost${i}`, password: 'x' })));
      samples.wrong.push(await timed(() => login.withPassword({ username: 'alice', password: `wrong${i}` })));
      await state.delete('login-failures:alice');
      await state.delete('login-locked:alice');
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
    const [u, w] = [median(samples.unknown), median(samples.wrong)];
    expect(u).to.be.greaterThan(10); // a real bcrypt ran for the unknown user
    expect(Math.abs(u - w) / Math.max(u, w)).to.be.lessThan(0.35);
  });

  it('waits a random 0.5–1 s after a failure by default', async function () {
    this.timeout(20_000);
    const login = service({ delay: 'default' });
    // The same failure without the delay: what the login itself costs (one bcrypt, the throttle).
    const bare = await timed(() => service().withPassword({ username: 'nobody-bare', password: 'x' }));
    for (let i = 0; i < 3; i++) {
      const elapsed = await timed(() => login.withPassword({ username: `nobody-default-${i}`, password: 'x' }));
      expect(elapsed).to.be.within(FAILURE_DELAY_MIN_MS, FAILURE_DELAY_MAX_MS + bare + 150);
    }
    const success = await timed(() => login.withPassword({ username: 'alice', password: 'right-password' }));
    expect(success).to.be.below(FAILURE_DELAY_MIN_MS);
    let delayed = 0;
    const injected = service({ delay: async () => void delayed++ });
    await failure(injected.withPassword({ username: 'nobody-delay', password: 'x' }));
    expect(delayed).to.equal(1);
  });

  it('answers invalid_credentials with one message for every kind of failure', async function () {
    const err = await failure(service().withPassword({ username: 'nobody-msg', password: 'x' }));
    expect(err.code).to.equal('invalid_credentials');
    expect(err.message).to.equal('invalid username or password');
  });

  it('calls admin switched off (absent from the accounts) disabled, not unknown, yet answers and counts it as any failure', async function () {
    const lines: Record<string, unknown>[] = [];
    const capture = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
    const login = service({ log: capture });
    const unknown = await failure(login.withPassword({ username: 'nobody-admin', password: 'x' }));
    const first = await failure(login.withPassword({ username: 'admin', password: 'x' }));
    expect([first.code, first.message]).to.deep.equal([unknown.code, unknown.message]);
    await failure(login.withPassword({ username: 'admin', password: 'y' }));
    // Counted as any failure: the third attempt is locked out.
    expect((await failure(login.withPassword({ username: 'admin', password: 'z' }))).code).to.equal('too_many_attempts');
    const failed = lines.filter((l) => l['msg'] === 'login failed').map((l) => [l['username'], l['reason']]);
    expect(failed.slice(0, 3)).to.deep.equal([['nobody-admin', 'no such account'], ['admin', 'account is disabled'], ['admin', 'account is disabled']]);
    await state.delete('login-failures:admin');
    await state.delete('login-locked:admin');
  });

  it('does not check the password while locked', async function () {
    const login = service();
    await failure(login.withPassword({ username: 'alice', password: 'bad1' }));
    await failure(login.withPassword({ username: 'alice', password: 'bad2' }));
    bcryptCalls = 0;
    (bcrypt as { compare: typeof bcrypt.compare }).compare = ((...args: Parameters<typeof realCompare>) => {
      bcryptCalls++;
      return realCompare(...args);
    }) as typeof bcrypt.compare;
    try {
      const err = await failure(login.withPassword({ username: 'alice', password: 'right-password' }));
      expect(err.code).to.equal('too_many_attempts');
      expect(bcryptCalls).to.equal(0);
      await failure(login.withPassword({ username: 'not-locked', password: 'x' }));
      expect(bcryptCalls).to.equal(1); // the spy does see comparisons when not locked
    } finally {
      (bcrypt as { compare: typeof bcrypt.compare }).compare = realCompare;
      await state.delete('login-failures:alice');
      await state.delete('login-locked:alice');
    }
  });

  it('keys the lockout on the name the account lookup compares: it compares exactly, so no other spelling logs in as a locked account', async function () {
    const login = service();
    try {
      await failure(login.withPassword({ username: 'alice', password: 'bad1' }));
      await failure(login.withPassword({ username: 'alice', password: 'bad2' }));
      // Each spelling is another name with a budget of its own, and none of them is alice's account.
      for (const spelling of ['Alice', 'ALICE', ' alice', 'alice ']) {
        const err = await failure(login.withPassword({ username: spelling, password: 'right-password' }));
        expect(err.code, JSON.stringify(spelling)).to.equal('invalid_credentials');
      }
      expect((await failure(login.withPassword({ username: 'alice', password: 'right-password' }))).code).to.equal('too_many_attempts');
    } finally {
      await state.delete('login-failures:alice');
      await state.delete('login-locked:alice');
    }
  });

  it('refuses names longer than 32 characters without counting them', async function () {
    const err = await failure(service().withPassword({ username: 'a'.repeat(33), password: 'x' }));
    expect(err).to.include({ code: 'invalid_request', message: 'username is longer than 32 characters' });
    expect(await state.get(`login-failures:${'a'.repeat(33)}`)).to.equal(null);
  });

  it('answers 503 too_many_requests over the concurrency cap, and 0 disables the cap', async function () {
    this.timeout(10_000);
    const capped = service({ maxConcurrent: 1 });
    const results = await Promise.allSettled(Array.from({ length: 4 }, () => capped.withPassword({ username: 'alice', password: 'right-password' })));
    const refused = results.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason as { code: string; message: string });
    expect(refused.length).to.equal(3);
    expect(refused[0]).to.include({ code: 'too_many_requests', message: 'too many login requests in progress (limit 1); try again shortly' });
    // More logins of one name in flight than the failure limit would be refused (throttle.ts).
    const open = service({ maxConcurrent: 0, maxFailCount: 5 });
    const all = await Promise.allSettled(Array.from({ length: 4 }, () => open.withPassword({ username: 'alice', password: 'right-password' })));
    expect(all.every((r) => r.status === 'fulfilled')).to.equal(true);
  });

  it('answers the right password of an account with a second factor with SecondFactorRequired, and clears no failure', async function () {
    const limits = { maxFailCount: 3, windowSeconds: 300, maxCacheSize: 1000, maxConcurrentLogins: 50 };
    const signer = createTokenSigner({ secretKey: () => 'k'.repeat(32), now: Date.now });
    const mfaState = createMemoryState();
    const begun: string[] = [];
    const login = createLoginService({
      accounts: () => new Map([['carol', { name: 'carol', enabled: true, capabilities: ['login'], tokens: [], passwordHash: hash, secondFactor: { totpSealed: 'x', recoveryHashes: [], passkeys: [] } }]]),
      throttle: createLoginThrottle({ state: mfaState, limits, log, registry: new Registry(), now: Date.now }),
      concurrency: createLoginConcurrency(50),
      signer,
      sessionDurationMs: () => 3_600_000,
      log,
      now: Date.now,
      failureDelay: async () => undefined,
      secondStep: {
        required: (account) => account.secondFactor?.totpSealed !== undefined,
        begin: async (account, pwh) => {
          begun.push(`${account.name}:${pwh}`);
          return new SecondFactorRequired('c'.repeat(43), ['totp']);
        },
      },
    });
    expect(await failure(login.withPassword({ username: 'carol', password: 'wrong' }))).to.include({ code: 'invalid_credentials' });
    const asked = await failure(login.withPassword({ username: 'carol', password: 'right-password' }));
    expect(asked).to.include({ code: 'second_factor_required' });
    expect(begun).to.deep.equal([`carol:${signer.passwordBinding(hash)}`]);
    // The wrong password is still counted: the password step handed its own attempt back, nothing more.
    expect(await mfaState.get('login-failures:carol')).to.equal('1');
    await mfaState.close();
  });
});

