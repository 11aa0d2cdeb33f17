/** Enrols and answers second factors over the API, for the second-factor tests. */
import { expect } from 'chai';
import { codeAt } from '../../src/second-factor/totp.js';
import { call, login, type Reply } from './accounts-fixture.js';

export interface Enrolled {
  readonly secret: string;
  readonly uri: string;
  readonly recoveryCodes: readonly string[];
  /** The session that enrolled. */
  readonly token: string;
}

/** Logs in with the password and enrols TOTP with the code of `now()`. */
export async function enrolTotp(base: string, username: string, password: string, now: () => number): Promise<Enrolled> {
  const token = await login(base, username, password);
  const started = await call(base, 'POST', '/api/v1/account/second-factor/totp', { token });
  expect(started.status, JSON.stringify(started.body)).to.equal(200);
  const secret = String(started.body['secret']);
  const confirmed = await call(base, 'POST', '/api/v1/account/second-factor/totp/confirm', { token, body: { code: codeAt(secret, now()) } });
  expect(confirmed.status, JSON.stringify(confirmed.body)).to.equal(200);
  return { secret, uri: String(started.body['uri']), recoveryCodes: confirmed.body['recoveryCodes'] as string[], token };
}

/** The password step: the 401 second_factor_required reply. */
export async function passwordStep(base: string, username: string, password: string): Promise<Reply> {
  return call(base, 'POST', '/api/v1/session', { body: { username, password } });
}

export async function challengeOf(base: string, username: string, password: string): Promise<string> {
  const reply = await passwordStep(base, username, password);
  expect(reply.status, JSON.stringify(reply.body)).to.equal(401);
  expect(reply.body['error']).to.equal('second_factor_required');
  return String(reply.body['challenge']);
}

export async function secondStep(base: string, challenge: string, code: string): Promise<Reply> {
  return call(base, 'POST', '/api/v1/session', { body: { challenge, code } });
}

/** Password then code: the final reply. */
export async function loginWithCode(base: string, username: string, password: string, code: string): Promise<Reply> {
  return secondStep(base, await challengeOf(base, username, password), code);
}
