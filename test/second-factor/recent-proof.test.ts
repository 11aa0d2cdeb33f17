/** The recent proof a change of factor takes: the password, and a code while a factor is on, counted as at login. */
import { expect } from 'chai';
import { createRecentProof } from '../../src/second-factor/recent-proof.js';
import { codeAt, newTotpSecret } from '../../src/second-factor/totp.js';
import { fakeAccounts, fakeLogin, keys, PASSWORD, refusal, sealedTotp, stateWithRecord } from './fakes.js';

function setup() {
  const accounts = fakeAccounts(['alice']);
  const login = fakeLogin();
  const state = stateWithRecord();
  const now = Date.now();
  const prove = createRecentProof({ checkPassword: login.checkPassword, throttle: login.throttle, codes: { state, factors: accounts.factors, keys, now: () => now } });
  const alice = () => accounts.accounts().get('alice') ?? expect.fail('no alice');
  return { accounts, login, prove, alice, now };
}

describe('second-factor/recent-proof', () => {
  it('without a factor: the password alone, checked by the login check under the account name, and its success clears the count', async () => {
    const { prove, alice, login } = setup();
    expect(await refusal(prove(alice(), { password: 'wrong' }))).to.deep.equal({ code: 'permission_denied', message: 'the password is incorrect' });
    await prove(alice(), { password: PASSWORD });
    expect(login.calls).to.deep.equal(['check:alice:false', 'check:alice:false']);
  });

  it('refuses a missing password before anything is checked (nothing counted)', async () => {
    const { prove, alice, login } = setup();
    for (const password of [undefined, '']) {
      expect(await refusal(prove(alice(), { password }))).to.deep.equal({ code: 'invalid_request', message: "field 'password' is required: changing a second factor takes the password of account 'alice'" });
    }
    expect(login.calls).to.deep.equal([]);
  });

  it('with a factor: refuses a missing code before the password is checked (nothing counted)', async () => {
    const { prove, alice, login, accounts } = setup();
    accounts.set('alice', { totpSealed: sealedTotp(newTotpSecret(), 'alice'), recoveryHashes: [], passkeys: [] });
    for (const code of [undefined, '', '  ']) {
      expect(await refusal(prove(alice(), { password: PASSWORD, code }))).to.deep.equal({
        code: 'invalid_request',
        message: "field 'code' is required: account 'alice' has a second factor; send a code from the authenticator app or a recovery code",
      });
    }
    expect(login.calls).to.deep.equal([]);
  });

  it('with a factor: a wrong password is refused before any code is checked; the right one clears nothing', async () => {
    const { prove, alice, login, accounts, now } = setup();
    const secret = newTotpSecret();
    accounts.set('alice', { totpSealed: sealedTotp(secret, 'alice'), recoveryHashes: [], passkeys: [] });
    expect(await refusal(prove(alice(), { password: 'wrong', code: codeAt(secret, now) }))).to.deep.equal({ code: 'permission_denied', message: 'the password is incorrect' });
    expect(login.calls).to.deep.equal(['check:alice:true']);
    // The code was not spent by the refused proof: it still works.
    await prove(alice(), { password: PASSWORD, code: codeAt(secret, now) });
    expect(login.calls).to.deep.equal(['check:alice:true', 'check:alice:true', 'admit:alice', 'success:alice']);
  });

  it('with a factor: a wrong or reused code counts as a failed attempt under the account name', async () => {
    const { prove, alice, login, accounts, now } = setup();
    const secret = newTotpSecret();
    accounts.set('alice', { totpSealed: sealedTotp(secret, 'alice'), recoveryHashes: [], passkeys: [] });
    await prove(alice(), { password: PASSWORD, code: codeAt(secret, now) });
    login.calls.length = 0;
    // The same code again: its step is used up, which is said as that (only a holder of the right code hears it).
    expect(await refusal(prove(alice(), { password: PASSWORD, code: codeAt(secret, now) }))).to.deep.equal({ code: 'permission_denied', message: 'this code was already used; wait for the next one (a new code every 30 seconds)' });
    const wrong = codeAt(secret, now - 600_000);
    expect(await refusal(prove(alice(), { password: PASSWORD, code: wrong === codeAt(secret, now) ? '000000' : wrong }))).to.deep.equal({ code: 'permission_denied', message: 'the second-factor code is incorrect or already used' });
    expect(login.calls).to.deep.equal(['check:alice:true', 'admit:alice', 'failure:alice', 'check:alice:true', 'admit:alice', 'failure:alice']);
  });

  it('takes a recovery code once, for a passkey-only account too', async () => {
    const { prove, alice, accounts } = setup();
    const hash = keys.recoveryHasher();
    accounts.set('alice', { recoveryHashes: [hash('abcde-fghij')], passkeys: [{ id: 'p1', name: 'laptop', publicKey: 'k', counter: 0, createdAt: 1 }] });
    await prove(alice(), { password: PASSWORD, code: 'ABCDE-FGHIJ' });
    expect(accounts.factorOf('alice').recoveryHashes).to.deep.equal([]);
    expect(await refusal(prove(alice(), { password: PASSWORD, code: 'abcde-fghij' }))).to.deep.include({ code: 'permission_denied' });
  });
});
