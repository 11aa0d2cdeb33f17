/**
 * A second factor for local accounts over the JSON API, on a running server: TOTP enrolment,
 * the login's second step with its single-use challenge, codes accepted once per time step,
 * recovery codes, the shared failure window, removal ending sessions, and the audit trail; every
 * change of factor taking the password (and a code while a factor is on), never the session
 * alone, and enrolment ending the account's other sessions.
 * The server's clock (Services.now) is moved in whole TOTP steps so codes of chosen steps can
 * be computed.
 */
import { expect } from 'chai';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { PasskeyRecord } from '../../src/accounts/account.js';
import { createFactorStore } from '../../src/second-factor/factor-store.js';
import { call, login, PASSWORDS, waitFor } from '../helpers/accounts-fixture.js';
import type { CollectedAudit } from '../helpers/audit.js';
import { challengeOf, enrolTotp, loginWithCode, passwordStep, secondStep, startSecondFactorSvc, STEP_MS, type Enrolled, type SecondFactorSvc } from '../helpers/second-factor.js';
import type { TestServer } from '../helpers/server.js';
import { codeAt } from '../../src/second-factor/totp.js';

describe('second factor over the API', function () {
  this.timeout(30_000);
  let svc: SecondFactorSvc;
  let dir: string;
  let server: TestServer;
  let base: string;
  let audit: CollectedAudit;
  const now = (): number => svc.now();
  const nextSteps = (): void => svc.nextSteps();
  let alice: Enrolled;

  before(async function () {
    // carol and dave log in too: the proof tests use them.
    svc = await startSecondFactorSvc({ maxFailCount: 5, cm: { 'accounts.carol': 'apiKey, login', 'accounts.dave.enabled': 'true' } });
    ({ dir, server, base, audit } = svc);
  });
  after(async function () {
    await svc.close();
  });

  it('enrols TOTP for the own session: an otpauth URI, counted only once confirmed, ten recovery codes shown once', async function () {
    const token = await login(base, 'alice', PASSWORDS.alice);
    const started = await call(base, 'POST', '/api/v1/account/second-factor/totp', { token, body: { password: PASSWORDS.alice } });
    expect(started.status).to.equal(200);
    const secret = String(started.body['secret']);
    expect(secret).to.match(/^[A-Z2-7]{32}$/);
    expect(String(started.body['uri'])).to.match(/^otpauth:\/\/totp\/.*alice\?.*secret=[A-Z2-7]{32}.*algorithm=SHA1&digits=6&period=30$/);
    const before = await call(base, 'GET', '/api/v1/account/second-factor', { token });
    expect(before.body).to.deep.equal({ totp: false, passkeys: [], recoveryCodesLeft: 0, required: false });
    // Not yet a factor: the password alone still logs in.
    expect((await passwordStep(base, 'alice', PASSWORDS.alice)).status).to.equal(200);
    const wrong = await call(base, 'POST', '/api/v1/account/second-factor/totp/confirm', { token, body: { code: codeAt(secret, now() - 10 * STEP_MS) } });
    expect(wrong.status).to.equal(400);
    expect(wrong.body['message']).to.equal("field 'code' does not match the new authenticator (or was already used): type the current code from the app");
    const confirmed = await call(base, 'POST', '/api/v1/account/second-factor/totp/confirm', { token, body: { code: codeAt(secret, now()) } });
    expect(confirmed.status).to.equal(200);
    const codes = confirmed.body['recoveryCodes'] as string[];
    expect(codes).to.have.length(10);
    expect(new Set(codes).size).to.equal(10);
    for (const code of codes) expect(code).to.match(/^[a-z2-7]{5}-[a-z2-7]{5}$/);
    const shown = await call(base, 'GET', '/api/v1/account/second-factor', { token });
    expect(shown.body).to.deep.equal({ totp: true, passkeys: [], recoveryCodesLeft: 10, required: false });
    const enrolled = audit.of('second-factor-enrolled');
    expect(enrolled).to.have.length(1);
    expect(enrolled[0]).to.deep.include({ category: 'iam', type: 'creation', outcome: 'success', user: { name: 'alice', id: 'alice' } });
    const trail = JSON.stringify(audit.events);
    expect(trail).not.to.include(secret);
    for (const code of codes) expect(trail).not.to.include(code);
    expect(server.logs()).not.to.include(secret);
    // Written as API tokens are: sealed, under mfa.alice., the operator's comment kept.
    const file = await readFile(join(dir, 'svc-secret.yaml'), 'utf8');
    expect(file).to.match(/mfa\.alice\.totp: \S+/);
    expect(file).to.match(/mfa\.alice\.recoveryCodes: /);
    expect(file).to.include('operator.note: keep me # an operator comment');
    expect(file).not.to.include(secret);
    alice = { secret, uri: String(started.body['uri']), recoveryCodes: codes, token };
  });

  it('lets no API token enrol, nor start a second TOTP while one is on', async function () {
    const session = await login(base, 'bob', PASSWORDS.bob);
    const made = await call(base, 'POST', '/api/v1/account/alice/token', { token: alice.token, body: { id: 'ci' } });
    expect(made.status).to.equal(200);
    const byToken = await call(base, 'POST', '/api/v1/account/second-factor/totp', { token: String(made.body['token']) });
    expect(byToken.status).to.equal(403);
    expect(byToken.body['message']).to.equal('API tokens may not change a second factor: log in with the password');
    const again = await call(base, 'POST', '/api/v1/account/second-factor/totp', { token: alice.token });
    expect(again.status).to.equal(409);
    expect(session).to.be.a('string');
  });

  it('answers the password with 401 second_factor_required, a challenge and the factors', async function () {
    const reply = await passwordStep(base, 'alice', PASSWORDS.alice);
    expect(reply.status).to.equal(401);
    expect(reply.body['error']).to.equal('second_factor_required');
    expect(reply.body['challenge']).to.match(/^[A-Za-z0-9_-]{43}$/);
    expect(reply.body['factors']).to.deep.equal(['totp', 'recovery']);
    expect(reply.body).not.to.have.property('token');
  });

  it('completes with a code as a password login does, and refuses the same code again', async function () {
    nextSteps();
    const code = codeAt(alice.secret, now());
    const challenge = await challengeOf(base, 'alice', PASSWORDS.alice);
    const ok = await secondStep(base, challenge, code);
    expect(ok.status).to.equal(200);
    expect(ok.headers.get('set-cookie')).to.match(/^svc\.token=/);
    const info = await call(base, 'GET', '/api/v1/session/userinfo', { token: String(ok.body['token']) });
    expect(info.body).to.deep.include({ loggedIn: true, username: 'alice' });
    const reused = await loginWithCode(base, 'alice', PASSWORDS.alice, code);
    expect(reused.status).to.equal(401);
    expect(reused.body).to.deep.equal({ error: 'invalid_credentials', message: 'this code was already used; wait for the next one (a new code every 30 seconds) and log in again' });
    const logins = audit.of('login').filter((e) => e.svc?.['step'] === 'second-factor');
    expect(logins.map((e) => e.outcome)).to.deep.equal(['success', 'failure']);
    expect(logins[0]?.svc).to.deep.equal({ step: 'second-factor', factor: 'totp' });
  });

  it('accepts the previous step\'s code once and refuses a code three steps old', async function () {
    nextSteps();
    const previous = codeAt(alice.secret, now() - STEP_MS);
    expect((await loginWithCode(base, 'alice', PASSWORDS.alice, previous)).status).to.equal(200);
    expect((await loginWithCode(base, 'alice', PASSWORDS.alice, previous)).status).to.equal(401);
    nextSteps();
    const old = codeAt(alice.secret, now() - 3 * STEP_MS);
    expect((await loginWithCode(base, 'alice', PASSWORDS.alice, old)).status).to.equal(401);
    expect((await loginWithCode(base, 'alice', PASSWORDS.alice, codeAt(alice.secret, now()))).status).to.equal(200);
  });

  it('uses a challenge once: a second use is refused, whatever the code', async function () {
    nextSteps();
    const challenge = await challengeOf(base, 'alice', PASSWORDS.alice);
    expect((await secondStep(base, challenge, codeAt(alice.secret, now()))).status).to.equal(200);
    const twice = await secondStep(base, challenge, codeAt(alice.secret, now() + STEP_MS));
    expect(twice.status).to.equal(401);
    expect(twice.body['message']).to.equal('the second-factor challenge is unknown, used or expired; log in again');
    const neither = await call(base, 'POST', '/api/v1/session', { body: { challenge: 'x' } });
    expect(neither.status).to.equal(400);
  });

  it('takes a recovery code once, and records its use', async function () {
    const code = alice.recoveryCodes[0] ?? '';
    const first = await loginWithCode(base, 'alice', PASSWORDS.alice, code.toUpperCase());
    expect(first.status).to.equal(200);
    expect(audit.of('recovery-code-used')).to.have.length(1);
    expect(audit.of('recovery-code-used')[0]?.svc).to.deep.equal({ left: 9 });
    expect(JSON.stringify(audit.events)).not.to.include(code);
    const again = await loginWithCode(base, 'alice', PASSWORDS.alice, code);
    expect(again.status).to.equal(401);
    const shown = await call(base, 'GET', '/api/v1/account/second-factor', { token: String(first.body['token']) });
    expect(shown.body['recoveryCodesLeft']).to.equal(9);
  });

  it('counts wrong codes in the failure window of wrong passwords; the lockout locks the second step too', async function () {
    const bob = await enrolTotp(base, 'bob', PASSWORDS.bob, now);
    nextSteps();
    const spare = await challengeOf(base, 'bob', PASSWORDS.bob);
    const wrong = codeAt(bob.secret, now() - 10 * STEP_MS);
    // The password steps one by one, then the five wrong codes at once: each failure's random
    // delay (0.5-1 s) runs beside the others, and every attempt is counted before its code is
    // checked, so they fill the window as codes sent one by one do.
    const challenges: string[] = [];
    for (let i = 0; i < 5; i++) challenges.push(await challengeOf(base, 'bob', PASSWORDS.bob));
    const replies = await Promise.all(challenges.map((challenge) => secondStep(base, challenge, wrong)));
    expect(replies.map((r) => r.status)).to.deep.equal([401, 401, 401, 401, 401]);
    const locked = await passwordStep(base, 'bob', PASSWORDS.bob);
    expect(locked.status).to.equal(429);
    expect(locked.body['error']).to.equal('too_many_attempts');
    const second = await secondStep(base, spare, codeAt(bob.secret, now()));
    expect(second.status).to.equal(429);
  });

  it('replaces the recovery codes with the password and a code; the old ones stop working', async function () {
    nextSteps();
    const session = await loginWithCode(base, 'alice', PASSWORDS.alice, codeAt(alice.secret, now()));
    const token = String(session.body['token']);
    const refused = await call(base, 'POST', '/api/v1/account/second-factor/recovery-codes', { token, body: { password: PASSWORDS.alice, code: '000000' } });
    expect(refused.status).to.equal(403);
    expect(refused.body['message']).to.equal('the second-factor code is incorrect or already used');
    // Counted as a wrong code at login is, and the right password clears nothing: guesses add up.
    expect(await server.services.state.get('login-failures:alice')).to.equal('1');
    expect((await call(base, 'POST', '/api/v1/account/second-factor/recovery-codes', { token, body: { password: PASSWORDS.alice, code: '000001' } })).status).to.equal(403);
    expect(await server.services.state.get('login-failures:alice')).to.equal('2');
    const replaced = await call(base, 'POST', '/api/v1/account/second-factor/recovery-codes', { token, body: { password: PASSWORDS.alice, code: alice.recoveryCodes[1] } });
    expect(replaced.status).to.equal(200);
    const fresh = replaced.body['recoveryCodes'] as string[];
    expect(fresh).to.have.length(10);
    expect((await loginWithCode(base, 'alice', PASSWORDS.alice, alice.recoveryCodes[2] ?? '')).status).to.equal(401);
    expect((await loginWithCode(base, 'alice', PASSWORDS.alice, fresh[0] ?? '')).status).to.equal(200);
    alice = { ...alice, recoveryCodes: fresh.slice(1) };
  });

  it('removes TOTP with the password and a code, and ends the account\'s sessions (API tokens live on)', async function () {
    nextSteps();
    const session = await loginWithCode(base, 'alice', PASSWORDS.alice, codeAt(alice.secret, now()));
    const token = String(session.body['token']);
    const made = await call(base, 'POST', '/api/v1/account/alice/token', { token, body: { id: 'kept' } });
    expect(made.status).to.equal(200);
    const badPassword = await call(base, 'DELETE', '/api/v1/account/second-factor/totp', { token, body: { password: 'wrong', code: codeAt(alice.secret, now() + STEP_MS) } });
    expect(badPassword.status).to.equal(403);
    const removed = await call(base, 'DELETE', '/api/v1/account/second-factor/totp', { token, body: { password: PASSWORDS.alice, code: codeAt(alice.secret, now() + STEP_MS) } });
    expect(removed.status, JSON.stringify(removed.body)).to.equal(200);
    await waitForRefusal(base, token);
    const after = await call(base, 'GET', '/api/v1/account', { token });
    expect(after.status).to.equal(401);
    expect(after.body['message']).to.equal("the sessions of account 'alice' were ended after this token was issued (a second factor changed, or an operator ended them); log in again");
    expect((await call(base, 'GET', '/api/v1/account', { token: String(made.body['token']) })).status).to.equal(200);
    expect((await passwordStep(base, 'alice', PASSWORDS.alice)).status).to.equal(200);
    expect(audit.of('second-factor-removed')).to.have.length(1);
  });

  describe('a stolen session alone never changes the second factor', function () {
    const TOTP = '/api/v1/account/second-factor/totp';
    const OPTIONS = '/api/v1/account/second-factor/webauthn/register-options';
    const RECOVERY = '/api/v1/account/second-factor/recovery-codes';
    const LAPTOP: PasskeyRecord = { id: 'Y3JlZC1sYXB0b3A', name: 'laptop', publicKey: 'cHVibGljLWtleQ', counter: 0, createdAt: 1_700_000_000 };
    const noPassword = (name: string): string => `field 'password' is required: changing a second factor takes the password of account '${name}'`;
    const noCode = (name: string): string => `field 'code' is required: account '${name}' has a second factor; send a code from the authenticator app or a recovery code`;
    const failures = (name: string): Promise<string | null> => server.services.state.get(`login-failures:${name}`);
    let carol: Enrolled;

    it('starts TOTP enrolment only with the password; a wrong one counts as a failed login', async function () {
      const token = await login(base, 'dave', PASSWORDS.dave);
      const bare = await call(base, 'POST', TOTP, { token });
      expect(bare.status).to.equal(400);
      expect(bare.body).to.deep.equal({ error: 'invalid_request', message: noPassword('dave') });
      const wrong = await call(base, 'POST', TOTP, { token, body: { password: 'wrong' } });
      expect(wrong.status).to.equal(403);
      expect(wrong.body).to.deep.equal({ error: 'permission_denied', message: 'the password is incorrect' });
      expect(await failures('dave')).to.equal('1');
      const started = await call(base, 'POST', TOTP, { token, body: { password: PASSWORDS.dave } });
      expect(started.status).to.equal(200);
      expect(String(started.body['secret'])).to.match(/^[A-Z2-7]{32}$/);
    });

    it('enrolling ends the account\'s other sessions; the enrolling one lives on', async function () {
      const other = await login(base, 'dave', PASSWORDS.dave);
      expect((await call(base, 'GET', '/api/v1/account/second-factor', { token: other })).status).to.equal(200);
      const dave = await enrolTotp(base, 'dave', PASSWORDS.dave, now);
      const refused = await call(base, 'GET', '/api/v1/account/second-factor', { token: other });
      expect(refused.status).to.equal(401);
      const kept = await call(base, 'GET', '/api/v1/account/second-factor', { token: dave.token });
      expect(kept.status).to.equal(200);
      expect(kept.body['totp']).to.equal(true);
      // Both of dave's earlier sessions (the previous test's and `other`), the enrolling one kept.
      const ended = audit.of('session-ended').filter((e) => e.svc?.['via'] === 'second-factor' && e.user?.id === 'dave');
      expect(ended).to.have.length(2);
      expect(tokenIdOf(dave.token)).to.match(/^[0-9a-f-]{36}$/);
      expect(ended.map((e) => e.svc?.['sessionId'])).not.to.include(tokenIdOf(dave.token));
      expect(audit.of('second-factor-enrolled').filter((e) => e.user?.name === 'dave').map((e) => e.svc?.['factor'])).to.deep.equal(['totp']);
    });

    it('gives passkey registration options only with the password, and a code while a factor is on; wrong ones count', async function () {
      carol = await enrolTotp(base, 'carol', PASSWORDS.carol, now);
      nextSteps();
      const token = carol.token;
      const bare = await call(base, 'POST', OPTIONS, { token });
      expect(bare.status).to.equal(400);
      expect(bare.body).to.deep.equal({ error: 'invalid_request', message: noPassword('carol') });
      const passwordOnly = await call(base, 'POST', OPTIONS, { token, body: { password: PASSWORDS.carol } });
      expect(passwordOnly.status).to.equal(400);
      expect(passwordOnly.body).to.deep.equal({ error: 'invalid_request', message: noCode('carol') });
      const wrongPassword = await call(base, 'POST', OPTIONS, { token, body: { password: 'wrong', code: codeAt(carol.secret, now()) } });
      expect(wrongPassword.status).to.equal(403);
      expect(await failures('carol')).to.equal('1');
      const wrongCode = await call(base, 'POST', OPTIONS, { token, body: { password: PASSWORDS.carol, code: '000000' } });
      expect(wrongCode.status).to.equal(403);
      expect(wrongCode.body['message']).to.equal('the second-factor code is incorrect or already used');
      expect(await failures('carol')).to.equal('2');
      const ok = await call(base, 'POST', OPTIONS, { token, body: { password: PASSWORDS.carol, code: codeAt(carol.secret, now()) } });
      expect(ok.status, JSON.stringify(ok.body)).to.equal(200);
      expect(ok.body['challenge']).to.be.a('string');
      expect(await failures('carol')).to.equal(null);
    });

    it('removes a passkey only with the password and a code; a wrong password counts; the removal ends the sessions', async function () {
      // A passkey as a registration stores it (the removal never reads its key).
      await createFactorStore(server.services.store).addPasskey('carol', LAPTOP, undefined);
      const status = async (): Promise<Record<string, unknown>> => (await call(base, 'GET', '/api/v1/account/second-factor', { token: carol.token })).body;
      await waitFor(async () => ((await status())['passkeys'] as unknown[]).length === 1, 'the passkey is in force');
      nextSteps();
      const path = `/api/v1/account/second-factor/webauthn/${LAPTOP.id}`;
      const bare = await call(base, 'DELETE', path, { token: carol.token });
      expect(bare.status).to.equal(400);
      expect(bare.body).to.deep.equal({ error: 'invalid_request', message: noPassword('carol') });
      const passwordOnly = await call(base, 'DELETE', path, { token: carol.token, body: { password: PASSWORDS.carol } });
      expect(passwordOnly.status).to.equal(400);
      expect(passwordOnly.body).to.deep.equal({ error: 'invalid_request', message: noCode('carol') });
      const wrongPassword = await call(base, 'DELETE', path, { token: carol.token, body: { password: 'wrong', code: codeAt(carol.secret, now()) } });
      expect(wrongPassword.status).to.equal(403);
      expect(await failures('carol')).to.equal('1');
      expect((await status())['passkeys']).to.deep.equal([{ id: LAPTOP.id, name: 'laptop', createdAt: LAPTOP.createdAt }]);
      const removed = await call(base, 'DELETE', path, { token: carol.token, body: { password: PASSWORDS.carol, code: codeAt(carol.secret, now()) } });
      expect(removed.status, JSON.stringify(removed.body)).to.equal(200);
      await waitForRefusal(base, carol.token);
      expect(audit.of('second-factor-removed').filter((e) => e.user?.name === 'carol').map((e) => e.svc?.['factor'])).to.deep.equal(['webauthn']);
    });

    it('replaces recovery codes only with the password and a code', async function () {
      nextSteps();
      const session = await loginWithCode(base, 'carol', PASSWORDS.carol, codeAt(carol.secret, now()));
      const token = String(session.body['token']);
      const bare = await call(base, 'POST', RECOVERY, { token });
      expect(bare.status).to.equal(400);
      expect(bare.body).to.deep.equal({ error: 'invalid_request', message: noPassword('carol') });
      const passwordOnly = await call(base, 'POST', RECOVERY, { token, body: { password: PASSWORDS.carol } });
      expect(passwordOnly.status).to.equal(400);
      expect(passwordOnly.body).to.deep.equal({ error: 'invalid_request', message: noCode('carol') });
      const wrongPassword = await call(base, 'POST', RECOVERY, { token, body: { password: 'wrong', code: carol.recoveryCodes[0] } });
      expect(wrongPassword.status).to.equal(403);
      expect(await failures('carol')).to.equal('1');
      const replaced = await call(base, 'POST', RECOVERY, { token, body: { password: PASSWORDS.carol, code: carol.recoveryCodes[0] } });
      expect(replaced.status, JSON.stringify(replaced.body)).to.equal(200);
      expect(replaced.body['recoveryCodes']).to.have.length(10);
    });

    it('locks the name after wrong passwords on factor changes, as wrong logins do', async function () {
      const token = await login(base, 'admin', PASSWORDS.admin);
      // At once: each failure's random delay runs beside the others; every attempt is counted before its password is checked.
      const wrong = await Promise.all(Array.from({ length: 5 }, () => call(base, 'POST', TOTP, { token, body: { password: 'wrong' } })));
      expect(wrong.map((r) => r.status)).to.deep.equal([403, 403, 403, 403, 403]);
      const locked = await passwordStep(base, 'admin', PASSWORDS.admin);
      expect(locked.status).to.equal(429);
      expect(locked.body['error']).to.equal('too_many_attempts');
      const refused = await call(base, 'POST', TOTP, { token, body: { password: PASSWORDS.admin } });
      expect(refused.status).to.equal(429);
      expect(refused.body).not.to.have.property('secret');
    });
  });
});

/** The `jti` of a session token (its id in the session registry), read without verifying. */
function tokenIdOf(token: string): string {
  const payload = token.split('.')[1] ?? '';
  return String((JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { jti?: unknown }).jti);
}

/** The store's watcher applies the write within moments: wait until the old session is refused. */
async function waitForRefusal(base: string, token: string): Promise<void> {
  const end = Date.now() + 5000;
  while ((await call(base, 'GET', '/api/v1/account', { token })).status !== 401) {
    if (Date.now() > end) throw new Error('the session was not ended');
    await new Promise((r) => setTimeout(r, 25));
  }
}
