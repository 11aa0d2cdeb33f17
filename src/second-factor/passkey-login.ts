/**
 * A passkey as the second step of a login: the assertion options for a login's challenge
 * (POST /api/v1/session/webauthn-options {challenge}), and the check of the answer. The
 * WebAuthn challenge is kept beside the login's challenge, single use, for
 * WEBAUTHN_CHALLENGE_TTL_MS. A signature counter that does not grow is accepted when it is 0
 * (synced passkeys always report 0); the library refuses one that went backwards otherwise.
 *
 * Key (the backend adds `svc:`): mfa-webauthn-login:<login challenge>.
 */
import { generateAuthenticationOptions, verifyAuthenticationResponse, type AuthenticationResponseJSON, type AuthenticatorTransport, type PublicKeyCredentialRequestOptionsJSON } from '@simplewebauthn/server';
import type { AccountSettings } from '../accounts/account.js';
import { factorOf } from '../accounts/account.js';
import { InvalidCredentials } from '../errors.js';
import type { StateBackend } from '../state/state.js';
import { peekChallenge } from './challenge.js';
import type { FactorStore } from './factor-store.js';
import { keepWebauthnChallenge, relyingPartyOf } from './relying-party.js';

const LOGIN_PREFIX = 'mfa-webauthn-login:';

export interface PasskeyLoginDeps {
  readonly state: StateBackend;
  readonly accounts: () => ReadonlyMap<string, AccountSettings>;
  readonly factors: Pick<FactorStore, 'updatePasskeyCounter'>;
  readonly url: () => string;
}

export interface PasskeyLogin {
  options(challenge: string): Promise<PublicKeyCredentialRequestOptionsJSON>;
  /** Whether `response` is a valid assertion of one of the account's passkeys for this login. */
  check(account: AccountSettings, response: unknown, challenge: string): Promise<boolean>;
}

export function createPasskeyLogin(deps: PasskeyLoginDeps): PasskeyLogin {
  return {
    async options(challenge) {
      const record = await peekChallenge(deps.state, challenge);
      const account = record === undefined ? undefined : deps.accounts().get(record.username);
      if (account === undefined || factorOf(account).passkeys.length === 0) {
        throw new InvalidCredentials('the second-factor challenge is unknown, used or expired, or its account has no passkey; log in again');
      }
      const options = await generateAuthenticationOptions({
        rpID: relyingPartyOf(deps.url()).rpID,
        allowCredentials: factorOf(account).passkeys.map((p) => ({ id: p.id, ...(p.transports !== undefined ? { transports: p.transports as AuthenticatorTransport[] } : {}) })),
        userVerification: 'preferred',
      });
      await keepWebauthnChallenge(deps.state, LOGIN_PREFIX + challenge, options.challenge);
      return options;
    },

    async check(account, response, challenge) {
      const expectedChallenge = await deps.state.take(LOGIN_PREFIX + challenge);
      if (expectedChallenge === null || response === null || typeof response !== 'object') return false;
      const id = (response as { id?: unknown }).id;
      const passkey = factorOf(account).passkeys.find((p) => p.id === id);
      if (passkey === undefined) return false;
      const { rpID, origin } = relyingPartyOf(deps.url());
      try {
        const result = await verifyAuthenticationResponse({
          response: response as AuthenticationResponseJSON,
          expectedChallenge,
          expectedOrigin: origin,
          expectedRPID: rpID,
          requireUserVerification: false,
          credential: { id: passkey.id, publicKey: Buffer.from(passkey.publicKey, 'base64url'), counter: passkey.counter, ...(passkey.transports !== undefined ? { transports: passkey.transports as AuthenticatorTransport[] } : {}) },
        });
        if (!result.verified) return false;
        if (result.authenticationInfo.newCounter > passkey.counter) await deps.factors.updatePasskeyCounter(account.name, passkey.id, result.authenticationInfo.newCounter);
        return true;
      } catch {
        return false;
      }
    },
  };
}
