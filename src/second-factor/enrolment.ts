/**
 * Enrolment of a second factor for the caller's own account: a session of a local account
 * (API tokens may not enrol: whoever holds one could otherwise bind the account to a factor of
 * their own; SSO logins have their identity provider's). Every change takes a recent proof
 * (recent-proof.ts: the password, and a code while a factor is on): a session alone changes
 * nothing. TOTP is a two-step enrolment: start (the proof; a fresh secret, kept sealed in the
 * state backend for ENROLMENT_TTL_MS and bound to the session that started it) then confirm with
 * a code from the app; only the confirmation writes the factor and the ten recovery codes, shown
 * that once, and ends the account's other sessions (other-sessions.ts). Removing TOTP ends the
 * account's sessions.
 *
 * Key (the backend adds `svc:`): mfa-totp-pending:<name>, the sealed secret being enrolled.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { AccountSettings } from '../accounts/account.js';
import { factorOf } from '../accounts/account.js';
import type { AuditSource, AuditTrail } from '../audit/trail.js';
import { Conflict, InvalidRequest, PermissionDenied } from '../errors.js';
import type { Principal } from '../principal.js';
import type { LoginThrottle } from '../session/throttle.js';
import type { StateBackend } from '../state/state.js';
import type { SecondFactorKeys } from './codes.js';
import type { FactorStore } from './factor-store.js';
import { enrolEndingOthers, type EndOtherSessions } from './other-sessions.js';
import { createRecentProof, type Proof, type RecentProofDeps } from './recent-proof.js';
import { newRecoveryCodes } from './recovery-codes.js';
import { matchingStep, newTotpSecret, totpUri } from './totp.js';
import { claimTotpStep } from './totp-replay.js';

export const ENROLMENT_TTL_MS = 10 * 60_000;
const PENDING_PREFIX = 'mfa-totp-pending:';

export interface SecondFactorStatus {
  readonly totp: boolean;
  readonly passkeys: readonly { readonly id: string; readonly name: string; readonly createdAt: number }[];
  readonly recoveryCodesLeft: number;
  /** users.mfa.required in force. */
  readonly required: boolean;
}

export interface EnrolmentDeps {
  readonly state: StateBackend;
  readonly accounts: () => ReadonlyMap<string, AccountSettings>;
  readonly factors: FactorStore;
  readonly keys: SecondFactorKeys;
  /** The login service's password check (throttle, timing and failure delay included). */
  readonly checkPassword: RecentProofDeps['checkPassword'];
  /** The login throttle: a wrong code here counts as one at login does (else a stolen session and password could guess codes freely). */
  readonly throttle: Pick<LoginThrottle, 'admit' | 'recordFailure' | 'recordSuccess'>;
  /** Where the account's other sessions are ended when a factor is enrolled. */
  readonly endOtherSessions: EndOtherSessions;
  readonly log: Pick<Logger, 'warn'>;
  readonly required: () => boolean;
  /** The issuer shown in authenticator apps: svc's host. */
  readonly issuer: () => string;
  readonly audit: AuditTrail;
  readonly now: () => number;
}

export interface Enrolment {
  status(caller: Principal): SecondFactorStatus;
  startTotp(caller: Principal, proof: Proof): Promise<{ readonly secret: string; readonly uri: string }>;
  confirmTotp(caller: Principal, code: string, source: AuditSource): Promise<{ readonly recoveryCodes: readonly string[] }>;
  removeTotp(caller: Principal, proof: Proof, source: AuditSource): Promise<void>;
  regenerateRecoveryCodes(caller: Principal, proof: Proof, source: AuditSource): Promise<{ readonly recoveryCodes: readonly string[] }>;
}

export type { Proof } from './recent-proof.js';

/** The account of a caller that may change its own second factor: a local session. */
export function ownAccount(caller: Principal, accounts: () => ReadonlyMap<string, AccountSettings>): AccountSettings {
  if (caller.kind !== 'session') {
    throw new PermissionDenied(caller.kind === 'apiKey' ? 'API tokens may not change a second factor: log in with the password' : 'second factors are for local accounts; an SSO login has its identity provider\'s');
  }
  const account = accounts().get(caller.username);
  if (account === undefined) throw new PermissionDenied(`account '${caller.username}' does not exist`);
  return account;
}

/** What the pending secret is sealed to: the account and the session that started the enrolment. */
function pendingContext(account: AccountSettings, caller: Principal): string {
  return `${account.name}\nsession:${caller.tokenId}`;
}

/** A whole second from now, waited for: sessions issued before it end, those after it live (as password-change.ts). */
export async function sessionCutoff(now: () => number): Promise<Date> {
  const cutoff = Math.ceil(now() / 1000) * 1000;
  const wait = cutoff - now();
  if (wait > 0) await sleep(wait);
  return new Date(cutoff);
}

export function createEnrolment(deps: EnrolmentDeps): Enrolment {
  const { state, keys, factors, audit } = deps;
  const proven = createRecentProof({ checkPassword: deps.checkPassword, throttle: deps.throttle, codes: { state, factors, keys, now: deps.now } });

  function newCodes(): { codes: string[]; hashes: string[] } {
    const hash = keys.recoveryHasher();
    const codes = newRecoveryCodes();
    return { codes, hashes: codes.map(hash) };
  }

  return {
    status(caller) {
      const account = ownAccount(caller, deps.accounts);
      const factor = factorOf(account);
      return {
        totp: factor.totpSealed !== undefined,
        passkeys: factor.passkeys.map(({ id, name, createdAt }) => ({ id, name, createdAt })),
        recoveryCodesLeft: factor.recoveryHashes.length,
        required: deps.required(),
      };
    },

    async startTotp(caller, proof) {
      const account = ownAccount(caller, deps.accounts);
      if (factorOf(account).totpSealed !== undefined) throw new Conflict(`account '${account.name}' already has TOTP; remove it first to enrol a new authenticator`);
      await proven(account, proof);
      const secret = newTotpSecret();
      await state.set(PENDING_PREFIX + account.name, keys.totpSealer().seal(secret, pendingContext(account, caller)), { ttlMs: ENROLMENT_TTL_MS });
      return { secret, uri: totpUri(secret, account.name, deps.issuer()) };
    },

    async confirmTotp(caller, code, source) {
      const account = ownAccount(caller, deps.accounts);
      const sealed = await state.get(PENDING_PREFIX + account.name);
      const secret = sealed === null ? undefined : keys.totpSealer().open(sealed, pendingContext(account, caller));
      if (secret === undefined) throw new InvalidRequest('no TOTP enrolment is in progress for this session (or it is older than 10 minutes): start again with POST /api/v1/account/second-factor/totp');
      const step = matchingStep(secret, code.trim(), deps.now());
      if (step === undefined || !(await claimTotpStep(state, account.name, step))) throw new InvalidRequest("field 'code' does not match the new authenticator (or was already used): type the current code from the app");
      const { codes, hashes } = newCodes();
      const { ended } = await enrolEndingOthers({ endOtherSessions: deps.endOtherSessions, log: deps.log }, account.name, caller, source, () => factors.enableTotp(account.name, keys.totpSealer().seal(secret, account.name), hashes));
      await state.delete(PENDING_PREFIX + account.name);
      audit.record({ category: 'iam', type: 'creation', action: 'second-factor-enrolled', outcome: 'success', user: { name: account.name, id: account.name }, source, svc: { factor: 'totp', otherSessionsEnded: ended } });
      return { recoveryCodes: codes };
    },

    async removeTotp(caller, proof, source) {
      const account = ownAccount(caller, deps.accounts);
      if (factorOf(account).totpSealed === undefined) throw new Conflict(`account '${account.name}' has no TOTP`);
      await proven(account, proof);
      await factors.removeTotp(account.name, await sessionCutoff(deps.now));
      audit.record({ category: 'iam', type: 'deletion', action: 'second-factor-removed', outcome: 'success', user: { name: account.name, id: account.name }, source, svc: { factor: 'totp', sessionsEnded: true } });
    },

    async regenerateRecoveryCodes(caller, proof, source) {
      const account = ownAccount(caller, deps.accounts);
      if (factorOf(account).totpSealed === undefined && factorOf(account).passkeys.length === 0) throw new Conflict(`account '${account.name}' has no second factor to recover`);
      await proven(account, proof);
      const { codes, hashes } = newCodes();
      await factors.replaceRecoveryCodes(account.name, hashes);
      audit.record({ category: 'iam', type: 'change', action: 'recovery-codes-replaced', outcome: 'success', user: { name: account.name, id: account.name }, source });
      return { recoveryCodes: codes };
    },
  };
}
