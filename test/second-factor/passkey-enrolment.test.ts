/**
 * Passkeys: asking for registration options and removing one take a recent proof (the password,
 * and a code while a factor is on), never the session alone; the registration challenge belongs
 * to the session that proved itself.
 */
import { expect } from 'chai';
import type { PasskeyRecord } from '../../src/accounts/account.js';
import { createPasskeyEnrolment, type PasskeyEnrolment } from '../../src/second-factor/passkey-enrolment.js';
import { codeAt, newTotpSecret } from '../../src/second-factor/totp.js';
import { fakeAccounts, fakeLogin, keys, PASSWORD, refusal, sealedTotp, session, type FakeAccounts, type FakeLogin, stateWithRecord } from './fakes.js';

const LAPTOP: PasskeyRecord = { id: 'cred-1', name: 'laptop', publicKey: 'k', counter: 0, createdAt: 1 };
const alice = session('alice', 'session-1');
const source = { requestId: 'r1' };

function setup(): { passkeys: PasskeyEnrolment; accounts: FakeAccounts; login: FakeLogin; now: number } {
  const accounts = fakeAccounts(['alice']);
  const login = fakeLogin();
  const now = Date.now();
  const passkeys = createPasskeyEnrolment({
    state: stateWithRecord(),
    accounts: accounts.accounts,
    factors: accounts.factors,
    keys,
    url: () => 'http://localhost:8080',
    checkPassword: login.checkPassword,
    throttle: login.throttle,
    endOtherSessions: () => Promise.resolve(0),
    log: { warn: () => undefined },
    audit: { record: () => undefined },
    now: () => now,
  });
  return { passkeys, accounts, login, now };
}

describe('second-factor/passkey-enrolment', () => {
  it('removes a passkey only with the password and a code; the last one too', async () => {
    const { passkeys, accounts, login } = setup();
    accounts.set('alice', { recoveryHashes: [keys.recoveryHasher()('abcde-fghij')], passkeys: [LAPTOP] });
    expect(await refusal(passkeys.remove(alice, LAPTOP.id, { password: PASSWORD }, source))).to.deep.equal({
      code: 'invalid_request',
      message: "field 'code' is required: account 'alice' has a second factor; send a code from the authenticator app or a recovery code",
    });
    expect(await refusal(passkeys.remove(alice, LAPTOP.id, { password: 'wrong', code: 'abcde-fghij' }, source))).to.deep.equal({ code: 'permission_denied', message: 'the password is incorrect' });
    expect(await refusal(passkeys.remove(alice, LAPTOP.id, { password: PASSWORD, code: 'zzzzz-zzzzz' }, source))).to.deep.equal({ code: 'permission_denied', message: 'the second-factor code is incorrect or already used' });
    expect(accounts.factorOf('alice').passkeys).to.deep.equal([LAPTOP]);
    expect(login.calls).to.deep.equal(['check:alice:true', 'check:alice:true', 'admit:alice', 'failure:alice']);
    await passkeys.remove(alice, LAPTOP.id, { password: PASSWORD, code: 'abcde-fghij' }, source);
    expect(accounts.factorOf('alice').passkeys).to.deep.equal([]);
  });

  it('answers 404 for a passkey the account does not have, before any proof is checked', async () => {
    const { passkeys, login } = setup();
    expect(await refusal(passkeys.remove(alice, 'nope', { password: PASSWORD }, source))).to.deep.equal({ code: 'not_found', message: "account 'alice' has no passkey with id 'nope'" });
    expect(login.calls).to.deep.equal([]);
  });

  it('gives registration options only with the password, and with a code while TOTP is on', async () => {
    const { passkeys, accounts, now } = setup();
    expect(await refusal(passkeys.registrationOptions(alice, { password: 'wrong' }))).to.deep.equal({ code: 'permission_denied', message: 'the password is incorrect' });
    expect((await passkeys.registrationOptions(alice, { password: PASSWORD })).challenge).to.be.a('string');
    const secret = newTotpSecret();
    accounts.set('alice', { totpSealed: sealedTotp(secret, 'alice'), recoveryHashes: [], passkeys: [] });
    expect(await refusal(passkeys.registrationOptions(alice, { password: PASSWORD }))).to.deep.include({ code: 'invalid_request' });
    expect((await passkeys.registrationOptions(alice, { password: PASSWORD, code: codeAt(secret, now) })).challenge).to.be.a('string');
  });

  it('keeps the registration challenge for the session that proved itself: another session of the account has none', async () => {
    const { passkeys } = setup();
    await passkeys.registrationOptions(alice, { password: PASSWORD });
    const other = session('alice', 'session-2');
    expect(await refusal(passkeys.register(other, { name: 'thief', response: {} }, source))).to.deep.equal({
      code: 'invalid_request',
      message: 'no passkey registration is in progress for this session (or it is older than 2 minutes): ask for register-options again',
    });
  });
});
