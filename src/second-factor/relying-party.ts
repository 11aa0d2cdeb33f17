/**
 * The WebAuthn relying party is svc's configured `url`: its host name is the rpID and its origin
 * the only origin a passkey answer is taken from. Challenges are kept in the state backend,
 * single use (taken atomically) and shorter-lived than WebAuthn's own default timeout.
 */
import type { StateBackend } from '../state/state.js';

export const WEBAUTHN_CHALLENGE_TTL_MS = 2 * 60_000;
export const RP_NAME = 'svc';

export interface RelyingParty {
  readonly rpID: string;
  readonly origin: string;
}

export function relyingPartyOf(url: string): RelyingParty {
  const parsed = new URL(url);
  return { rpID: parsed.hostname, origin: parsed.origin };
}

/** Keeps a WebAuthn challenge for WEBAUTHN_CHALLENGE_TTL_MS under `key`. */
export async function keepWebauthnChallenge(state: StateBackend, key: string, challenge: string): Promise<void> {
  await state.set(key, challenge, { ttlMs: WEBAUTHN_CHALLENGE_TTL_MS });
}
