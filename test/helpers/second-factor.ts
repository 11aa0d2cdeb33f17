/**
 * Enrols and answers second factors over the API, for the second-factor tests; and the server
 * they run against: the accounts fixture, a collecting audit trail, and a clock the test moves
 * on in whole TOTP steps so that codes of chosen steps can be computed.
 */
import { rm } from 'node:fs/promises';
import { expect } from 'chai';
import { codeAt } from '../../src/second-factor/totp.js';
import { accountsConfigDir, call, login, type Reply } from './accounts-fixture.js';
import { collectAudit, type CollectedAudit } from './audit.js';
import { freePort } from './peers.js';
import { startTestServer, type TestServer } from './server.js';

/** One TOTP time step. */
export const STEP_MS = 30_000;

/** A server's clock (Services.now) that the test moves on in whole TOTP steps. */
export interface StepClock {
  readonly now: () => number;
  /** Moves the clock four TOTP steps on: every code accepted so far is out of the window. */
  readonly nextSteps: () => void;
}

export function stepClock(): StepClock {
  let offset = 0;
  return {
    now: () => Date.now() + offset,
    nextSteps: () => {
      offset += 4 * STEP_MS;
    },
  };
}

export interface SecondFactorSvc extends StepClock {
  readonly server: TestServer;
  /** Its config dir (the accounts fixture). */
  readonly dir: string;
  /** svc's url, as the pages are opened. */
  readonly base: string;
  readonly audit: CollectedAudit;
  /** Stops the server and removes its config dir. */
  close(): Promise<void>;
}

export interface SecondFactorSvcOptions {
  /** SVC_SESSION_FAILURE_MAX_FAIL_COUNT: the failures (wrong codes among them) that lock a name out. */
  readonly maxFailCount: number;
  /** Serve on http://localhost:<port> (WebAuthn takes no IP address as relying party) rather than 127.0.0.1. */
  readonly localhost?: boolean;
  /** More svc-cm keys (to let the fixture's carol and dave log in, say). */
  readonly cm?: Readonly<Record<string, string>>;
}

export async function startSecondFactorSvc(options: SecondFactorSvcOptions): Promise<SecondFactorSvc> {
  const clock = stepClock();
  const port = options.localhost === true ? await freePort() : undefined;
  const url = port === undefined ? undefined : `http://localhost:${port}`;
  const dir = accountsConfigDir({ cm: { ...options.cm, ...(url === undefined ? {} : { url }) } });
  const audit = collectAudit();
  let server: TestServer;
  try {
    server = await startTestServer(dir, { ...(port !== undefined ? { port } : {}), now: clock.now, audit, env: { SVC_SESSION_FAILURE_MAX_FAIL_COUNT: String(options.maxFailCount) } });
  } catch (err: unknown) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    ...clock, server, dir, base: url ?? server.url, audit,
    async close() {
      await server.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export interface Enrolled {
  readonly secret: string;
  readonly uri: string;
  readonly recoveryCodes: readonly string[];
  /** The session that enrolled. */
  readonly token: string;
}

/** Logs in with the password and enrols TOTP (the password again as its proof) with the code of `now()`. */
export async function enrolTotp(base: string, username: string, password: string, now: () => number): Promise<Enrolled> {
  const token = await login(base, username, password);
  const started = await call(base, 'POST', '/api/v1/account/second-factor/totp', { token, body: { password } });
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
