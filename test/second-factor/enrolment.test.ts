/**
 * TOTP enrolment, removal and recovery codes take a recent proof, never the session alone; a
 * confirmed enrolment ends the account's other sessions, and none is written when they cannot
 * be ended.
 */
import { expect } from 'chai';
import type { AuditEvent } from '../../src/audit/trail.js';
import { createEnrolment, type Enrolment } from '../../src/second-factor/enrolment.js';
import type { EndOtherSessions } from '../../src/second-factor/other-sessions.js';
import { codeAt } from '../../src/second-factor/totp.js';
import type { EndContext } from '../../src/session/registry.js';
import { fakeAccounts, fakeLogin, keys, PASSWORD, refusal, session, type FakeAccounts, type FakeLogin, stateWithRecord } from './fakes.js';

interface Setup {
  readonly enrolment: Enrolment;
  readonly accounts: FakeAccounts;
  readonly login: FakeLogin;
  readonly ended: { account: string; keepId: string; context: EndContext }[];
  readonly events: AuditEvent[];
  endFails: boolean;
  readonly now: number;
}

function setup(): Setup {
  const accounts = fakeAccounts(['alice']);
  const login = fakeLogin();
  const ended: Setup['ended'] = [];
  const events: AuditEvent[] = [];
  const now = Date.now();
  const s: Setup = { enrolment: undefined as unknown as Enrolment, accounts, login, ended, events, endFails: false, now };
  const endOtherSessions: EndOtherSessions = (account, keepId, context) => {
    if (s.endFails) return Promise.reject(new Error('state backend unavailable'));
    ended.push({ account, keepId, context });
    return Promise.resolve(2);
  };
  const enrolment = createEnrolment({
    state: stateWithRecord(),
    accounts: accounts.accounts,
    factors: accounts.factors,
    keys,
    checkPassword: login.checkPassword,
    throttle: login.throttle,
    endOtherSessions,
    log: { warn: () => undefined },
    required: () => false,
    issuer: () => 'svc (test)',
    audit: { record: (e) => events.push(e) },
    now: () => now,
  });
  return Object.assign(s, { enrolment });
}

const alice = session('alice', 'session-1');
const source = { requestId: 'r1' };

describe('second-factor/enrolment', () => {
  it('starts TOTP only with the account password: a wrong one is refused, counted by the login check, and shows no secret', async () => {
    const { enrolment, login } = setup();
    expect(await refusal(enrolment.startTotp(alice, { password: 'wrong' }))).to.deep.equal({ code: 'permission_denied', message: 'the password is incorrect' });
    expect(login.calls).to.deep.equal(['check:alice:false']);
    // Nothing was started: there is nothing to confirm.
    expect(await refusal(enrolment.confirmTotp(alice, '123456', source))).to.deep.include({ code: 'invalid_request' });
    const started = await enrolment.startTotp(alice, { password: PASSWORD });
    expect(started.secret).to.match(/^[A-Z2-7]{32}$/);
  });

  it('asks for a code as well when the account already has a factor (a passkey)', async () => {
    const { enrolment, accounts } = setup();
    const hash = keys.recoveryHasher();
    accounts.set('alice', { recoveryHashes: [hash('abcde-fghij')], passkeys: [{ id: 'p1', name: 'laptop', publicKey: 'k', counter: 0, createdAt: 1 }] });
    expect(await refusal(enrolment.startTotp(alice, { password: PASSWORD }))).to.deep.include({ code: 'invalid_request' });
    expect(await refusal(enrolment.startTotp(alice, { password: PASSWORD, code: 'zzzzz-zzzzz' }))).to.deep.equal({ code: 'permission_denied', message: 'the second-factor code is incorrect or already used' });
    expect((await enrolment.startTotp(alice, { password: PASSWORD, code: 'abcde-fghij' })).secret).to.match(/^[A-Z2-7]{32}$/);
  });

  it('confirms only in the session that proved itself: another session of the account cannot finish the enrolment', async () => {
    const { enrolment, accounts, now } = setup();
    const { secret } = await enrolment.startTotp(alice, { password: PASSWORD });
    const other = session('alice', 'session-2');
    expect(await refusal(enrolment.confirmTotp(other, codeAt(secret, now), source))).to.deep.equal({
      code: 'invalid_request',
      message: 'no TOTP enrolment is in progress for this session (or it is older than 10 minutes): start again with POST /api/v1/account/second-factor/totp',
    });
    expect(accounts.factorOf('alice').totpSealed).to.equal(undefined);
  });

  it('ends the account\'s other sessions around the write, the enrolling one kept, and records how many', async () => {
    const { enrolment, accounts, ended, events, now } = setup();
    const { secret } = await enrolment.startTotp(alice, { password: PASSWORD });
    const { recoveryCodes } = await enrolment.confirmTotp(alice, codeAt(secret, now), source);
    expect(recoveryCodes).to.have.length(10);
    expect(accounts.factorOf('alice').totpSealed).to.be.a('string');
    expect(ended).to.deep.equal([
      { account: 'alice', keepId: 'session-1', context: { via: 'second-factor', source } },
      { account: 'alice', keepId: 'session-1', context: { via: 'second-factor', source } },
    ]);
    expect(events.find((e) => e.action === 'second-factor-enrolled')?.svc).to.deep.equal({ factor: 'totp', otherSessionsEnded: 4 });
  });

  it('enrols nothing when the other sessions cannot be ended', async () => {
    const s = setup();
    const { secret } = await s.enrolment.startTotp(alice, { password: PASSWORD });
    s.endFails = true;
    expect((await refusal(s.enrolment.confirmTotp(alice, codeAt(secret, s.now), source))).message).to.equal('state backend unavailable');
    expect(s.accounts.writes()).to.equal(0);
    expect(s.accounts.factorOf('alice').totpSealed).to.equal(undefined);
  });

  it('removes TOTP and replaces recovery codes only with the password and a code', async () => {
    const { enrolment, accounts, now } = setup();
    const { secret } = await enrolment.startTotp(alice, { password: PASSWORD });
    await enrolment.confirmTotp(alice, codeAt(secret, now), source);
    const writes = accounts.writes();
    expect(await refusal(enrolment.removeTotp(alice, { password: PASSWORD }, source))).to.deep.include({ code: 'invalid_request' });
    expect(await refusal(enrolment.removeTotp(alice, { password: 'wrong', code: codeAt(secret, now + 30_000) }, source))).to.deep.include({ code: 'permission_denied' });
    expect(await refusal(enrolment.regenerateRecoveryCodes(alice, { password: PASSWORD }, source))).to.deep.include({ code: 'invalid_request' });
    expect(await refusal(enrolment.regenerateRecoveryCodes(alice, { password: 'wrong', code: codeAt(secret, now + 30_000) }, source))).to.deep.include({ code: 'permission_denied' });
    expect(accounts.writes()).to.equal(writes);
  });
});
