/**
 * The login's second step (src/second-factor/second-step.ts) on its own: the account must still
 * be as the password step found it (the same password, a factor, enabled) before any factor is
 * checked or a session issued; every refusal reads alike, and its reason goes to the log and the
 * audit trail. Memory state; the factor check and the session issuer are stand-ins that record calls.
 */
import { expect } from 'chai';
import { pino } from 'pino';
import type { AccountSettings } from '../../src/accounts/account.js';
import type { AuditEvent } from '../../src/audit/trail.js';
import { InvalidCredentials } from '../../src/errors.js';
import { createChallenge } from '../../src/second-factor/challenge.js';
import { createSecondStep, WRONG_SECOND_FACTOR, type CompleteSecondStep } from '../../src/second-factor/second-step.js';
import { createMemoryState } from '../../src/state/memory.js';
import type { StateBackend } from '../../src/state/state.js';

const OLD_HASH = '$2b$10$oldoldoldoldoldoldoldoldoldoldoldoldoldoldoldoldold';
const NEW_HASH = '$2b$10$newnewnewnewnewnewnewnewnewnewnewnewnewnewnewnewnew';
const binding = (hash: string): string => `binding-of:${hash}`;
const withTotp = (passwordHash: string): AccountSettings => ({
  name: 'alice', enabled: true, capabilities: ['login'], passwordHash, tokens: [],
  secondFactor: { totpSealed: 'sealed', recoveryHashes: [], passkeys: [] },
});

describe('second-factor/second-step', function () {
  let state: StateBackend;
  let accounts: Map<string, AccountSettings>;
  let calls: string[];
  let failures: number[];
  let logged: Record<string, unknown>[];
  let audited: AuditEvent[];
  let complete: CompleteSecondStep;

  beforeEach(function () {
    state = createMemoryState({ log: pino({ level: 'silent' }) });
    accounts = new Map();
    calls = [];
    failures = [];
    logged = [];
    audited = [];
    complete = createSecondStep({
      state,
      accounts: () => accounts,
      throttle: {
        admit: async () => 1,
        recordFailure: async (_name, attempt) => void failures.push(attempt),
        recordSuccess: async (name) => void calls.push(`success:${name}`),
      },
      passwordBinding: binding,
      issueSession: async (username, hash) => {
        calls.push(`issue:${username}:${hash}`);
        return { token: 'session-token', tokenId: 'session-id', expiresAt: 0 };
      },
      check: async () => {
        calls.push('check');
        return 'totp';
      },
      audit: { record: (event) => void audited.push(event) },
      log: { info: (fields: object) => void logged.push(fields as Record<string, unknown>) },
      failureDelay: async () => undefined,
      outcomes: { record: () => undefined },
    });
  });
  afterEach(() => state.close());

  async function refusal(challenge: string): Promise<unknown> {
    return complete({ challenge, answer: { code: '123456' }, source: { ip: '192.0.2.1' } }).then(() => undefined, (err: unknown) => err);
  }

  it('says a right code of a time step already used was used, and to wait for the next one; counted as a wrong code', async function () {
    const challenge = await createChallenge(state, { username: 'alice', pwh: binding(OLD_HASH) });
    accounts.set('alice', withTotp(OLD_HASH));
    const reusing = createSecondStep({
      state, accounts: () => accounts, passwordBinding: binding, failureDelay: async () => undefined, outcomes: { record: () => undefined },
      throttle: { admit: async () => 1, recordFailure: async (_name, attempt) => void failures.push(attempt), recordSuccess: async () => expect.fail('a reused code is no success') },
      issueSession: async () => expect.fail('no session for a reused code'),
      check: async () => 'reused',
      audit: { record: (event) => void audited.push(event) },
      log: { info: (fields: object) => void logged.push(fields as Record<string, unknown>) },
    });
    const err = await reusing({ challenge, answer: { code: '123456' }, source: { ip: '192.0.2.1' } }).then(() => undefined, (e: unknown) => e);
    expect(err).to.be.instanceOf(InvalidCredentials);
    expect((err as Error).message).to.equal('this code was already used; wait for the next one (a new code every 30 seconds) and log in again');
    expect(failures).to.deep.equal([1]);
    expect(audited.map((e) => [e.outcome, e.reason])).to.deep.equal([['failure', 'TOTP code of a time step already used']]);
  });

  it('refuses a second step whose password changed after the password step, before checking the code', async function () {
    const challenge = await createChallenge(state, { username: 'alice', pwh: binding(OLD_HASH) });
    accounts.set('alice', withTotp(NEW_HASH));
    const err = await refusal(challenge);
    expect(err).to.be.instanceOf(InvalidCredentials);
    expect((err as Error).message).to.equal(WRONG_SECOND_FACTOR);
    expect(calls, 'no code checked, no session issued').to.deep.equal([]);
    expect(failures, 'counted as a failure').to.deep.equal([1]);
    expect(logged.map((l) => l['reason'])).to.deep.equal(['the password changed after the password step']);
    expect(audited.map((e) => [e.outcome, e.reason])).to.deep.equal([['failure', 'the password changed after the password step']]);
    // The challenge is spent: with the old password back, it still does not complete.
    accounts.set('alice', withTotp(OLD_HASH));
    expect(((await refusal(challenge)) as Error).message).to.equal('the second-factor challenge is unknown, used or expired; log in again');
  });

  it('refuses an account whose password was removed, or whose factor was, after the password step', async function () {
    const noPassword = await createChallenge(state, { username: 'alice', pwh: binding(OLD_HASH) });
    const { passwordHash: _, ...without } = withTotp(OLD_HASH);
    accounts.set('alice', without);
    expect(await refusal(noPassword)).to.be.instanceOf(InvalidCredentials);
    const noFactor = await createChallenge(state, { username: 'alice', pwh: binding(OLD_HASH) });
    accounts.set('alice', { ...withTotp(OLD_HASH), secondFactor: { recoveryHashes: ['h'], passkeys: [] } });
    expect(await refusal(noFactor)).to.be.instanceOf(InvalidCredentials);
    expect(logged.map((l) => l['reason'])).to.deep.equal(['the password changed after the password step', 'the second factor was removed after the password step']);
    expect(calls).to.deep.equal([]);
  });

  it('issues the session when the password is the one the password step checked', async function () {
    const challenge = await createChallenge(state, { username: 'alice', pwh: binding(OLD_HASH) });
    accounts.set('alice', withTotp(OLD_HASH));
    const done = await complete({ challenge, answer: { code: '123456' }, source: { ip: '192.0.2.1' } });
    expect(done).to.deep.equal({ username: 'alice', token: 'session-token', tokenId: 'session-id', expiresAt: 0 });
    expect(calls).to.deep.equal(['check', 'success:alice', `issue:alice:${OLD_HASH}`]);
    expect(failures).to.deep.equal([]);
  });
});
