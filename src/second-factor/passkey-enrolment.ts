/**
 * Passkeys (WebAuthn Level 2, @simplewebauthn/server) for the caller's own account: options
 * with a single-use challenge (state backend, WEBAUTHN_CHALLENGE_TTL_MS), then the
 * authenticator's answer, verified against svc's `url` and stored with its public key only.
 * Several per account, each named. The first factor of an account comes with its ten recovery
 * codes, shown once. Asking for the options and removing one take a recent proof
 * (recent-proof.ts: the password, and a code while a factor is on); the challenge is bound to the
 * session that proved it. Registering ends the account's other sessions (other-sessions.ts);
 * removing one ends all of them.
 *
 * Key (the backend adds `svc:`): mfa-webauthn-register:<name>, the registration challenge and
 * the session it was given to.
 */
import type { Logger } from 'pino';
import { generateRegistrationOptions, verifyRegistrationResponse, type PublicKeyCredentialCreationOptionsJSON, type RegistrationResponseJSON } from '@simplewebauthn/server';
import type { AccountSettings, PasskeyRecord } from '../accounts/account.js';
import { factorOf } from '../accounts/account.js';
import type { AuditSource, AuditTrail } from '../audit/trail.js';
import { InvalidRequest, NotFound } from '../errors.js';
import type { Principal } from '../principal.js';
import type { LoginThrottle } from '../session/throttle.js';
import type { StateBackend } from '../state/state.js';
import type { SecondFactorKeys } from './codes.js';
import { ownAccount, sessionCutoff } from './enrolment.js';
import type { FactorStore } from './factor-store.js';
import { enrolEndingOthers, type EndOtherSessions } from './other-sessions.js';
import { createRecentProof, type Proof, type RecentProofDeps } from './recent-proof.js';
import { newRecoveryCodes } from './recovery-codes.js';
import { keepWebauthnChallenge, relyingPartyOf, RP_NAME } from './relying-party.js';

const REGISTER_PREFIX = 'mfa-webauthn-register:';
const MAX_PASSKEY_NAME = 64;
/** Far more than anyone carries; each is a record in svc-secret. */
export const MAX_PASSKEYS = 20;

export interface PasskeyEnrolmentDeps {
  readonly state: StateBackend;
  readonly accounts: () => ReadonlyMap<string, AccountSettings>;
  readonly factors: FactorStore;
  readonly keys: SecondFactorKeys;
  readonly url: () => string;
  /** The login service's password check and throttle, for the recent proof. */
  readonly checkPassword: RecentProofDeps['checkPassword'];
  readonly throttle: Pick<LoginThrottle, 'admit' | 'recordFailure' | 'recordSuccess'>;
  /** Where the account's other sessions are ended when a passkey is registered. */
  readonly endOtherSessions: EndOtherSessions;
  readonly log: Pick<Logger, 'warn'>;
  readonly audit: AuditTrail;
  readonly now: () => number;
}

export interface PasskeyEnrolment {
  registrationOptions(caller: Principal, proof: Proof): Promise<PublicKeyCredentialCreationOptionsJSON>;
  register(caller: Principal, request: { readonly name: string; readonly response: unknown }, source: AuditSource): Promise<{ readonly id: string; readonly recoveryCodes?: readonly string[] }>;
  remove(caller: Principal, id: string, proof: Proof, source: AuditSource): Promise<void>;
}

/** The kept challenge: the session it was given to, a space, the challenge (base64url, no space). */
function pendingValue(caller: Principal, challenge: string): string {
  return `${caller.tokenId} ${challenge}`;
}

/** The challenge kept for this session, or null: one given to another session is not this one's. */
function challengeFor(caller: Principal, kept: string | null): string | null {
  if (kept === null) return null;
  const space = kept.lastIndexOf(' ');
  return space > 0 && kept.slice(0, space) === caller.tokenId ? kept.slice(space + 1) : null;
}

export function createPasskeyEnrolment(deps: PasskeyEnrolmentDeps): PasskeyEnrolment {
  const { state, factors, audit } = deps;
  const proven = createRecentProof({ checkPassword: deps.checkPassword, throttle: deps.throttle, codes: { state, factors, keys: deps.keys, now: deps.now } });
  return {
    async registrationOptions(caller, proof) {
      const account = ownAccount(caller, deps.accounts);
      await proven(account, proof);
      const { rpID } = relyingPartyOf(deps.url());
      const options = await generateRegistrationOptions({
        rpName: RP_NAME,
        rpID,
        userName: account.name,
        userID: new TextEncoder().encode(account.name),
        attestationType: 'none',
        excludeCredentials: factorOf(account).passkeys.map((p) => ({ id: p.id })),
        authenticatorSelection: { residentKey: 'preferred', userVerification: 'preferred' },
      });
      await keepWebauthnChallenge(state, REGISTER_PREFIX + account.name, pendingValue(caller, options.challenge));
      return options;
    },

    async register(caller, { name, response }, source) {
      const account = ownAccount(caller, deps.accounts);
      const trimmed = name.trim();
      if (trimmed === '' || trimmed.length > MAX_PASSKEY_NAME) throw new InvalidRequest(`field 'name' must be 1 to ${MAX_PASSKEY_NAME} characters`);
      if (factorOf(account).passkeys.length >= MAX_PASSKEYS) throw new InvalidRequest(`account '${account.name}' already has ${MAX_PASSKEYS} passkeys, the most allowed; remove one first`);
      const expectedChallenge = challengeFor(caller, await state.take(REGISTER_PREFIX + account.name));
      if (expectedChallenge === null) throw new InvalidRequest('no passkey registration is in progress for this session (or it is older than 2 minutes): ask for register-options again');
      const { rpID, origin } = relyingPartyOf(deps.url());
      let verified;
      try {
        verified = await verifyRegistrationResponse({ response: response as RegistrationResponseJSON, expectedChallenge, expectedOrigin: origin, expectedRPID: rpID, requireUserVerification: false });
      } catch (err: unknown) {
        throw new InvalidRequest(`field 'response' is not a valid passkey registration for ${origin}: ${(err as Error).message}`, { cause: err });
      }
      if (!verified.verified) throw new InvalidRequest(`field 'response' is not a valid passkey registration for ${origin}`);
      const credential = verified.registrationInfo.credential;
      const passkey: PasskeyRecord = {
        id: credential.id,
        name: trimmed,
        publicKey: Buffer.from(credential.publicKey).toString('base64url'),
        counter: credential.counter,
        ...(credential.transports !== undefined ? { transports: credential.transports } : {}),
        createdAt: Math.floor(deps.now() / 1000),
      };
      const first = factorOf(account).recoveryHashes.length === 0;
      const codes = first ? newRecoveryCodes() : undefined;
      const hashes = codes?.map(deps.keys.recoveryHasher());
      const { ended } = await enrolEndingOthers(deps, account.name, caller, source, () => factors.addPasskey(account.name, passkey, hashes));
      audit.record({ category: 'iam', type: 'creation', action: 'second-factor-enrolled', outcome: 'success', user: { name: account.name, id: account.name }, source, svc: { factor: 'webauthn', passkey: trimmed, otherSessionsEnded: ended } });
      return { id: passkey.id, ...(codes !== undefined ? { recoveryCodes: codes } : {}) };
    },

    async remove(caller, id, proof, source) {
      const account = ownAccount(caller, deps.accounts);
      if (!factorOf(account).passkeys.some((p) => p.id === id)) throw new NotFound(`account '${account.name}' has no passkey with id '${id.slice(0, 100)}'`);
      await proven(account, proof);
      await factors.removePasskey(account.name, id, await sessionCutoff(deps.now));
      audit.record({ category: 'iam', type: 'deletion', action: 'second-factor-removed', outcome: 'success', user: { name: account.name, id: account.name }, source, svc: { factor: 'webauthn', sessionsEnded: true } });
    },
  };
}
