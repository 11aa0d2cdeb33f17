/**
 * Recovery codes: ten, each usable once, shown once, stored as HMACs (never the codes). Ten
 * base32 characters (50 bits) each: far beyond what the login throttle lets anyone guess. The
 * HMAC key is derived from server.secretkey, so a copy of svc-secret's `mfa.` keys alone does
 * not give a table to test guesses against offline.
 */
import { createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { secretKeyObject } from '../lib/secret-key.js';

export const RECOVERY_CODE_COUNT = 10;
const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';
const CODE_CHARS = 10;

/** `xxxxx-xxxxx`, lower-case base32. */
export function newRecoveryCodes(): string[] {
  return Array.from({ length: RECOVERY_CODE_COUNT }, () => {
    const bytes = randomBytes(CODE_CHARS);
    const chars = [...bytes].map((b) => ALPHABET[b % ALPHABET.length]).join('');
    return `${chars.slice(0, 5)}-${chars.slice(5)}`;
  });
}

/** What a person may type: case, spaces and dashes do not matter. */
function normalise(code: string): string {
  return code.toLowerCase().replace(/[\s-]/g, '');
}

export type RecoveryCodeHasher = (code: string) => string;

export function recoveryCodeHasher(secretKey: string): RecoveryCodeHasher {
  const key = secretKeyObject(hkdfSync('sha256', secretKey, 'svc-mfa', 'svc recovery-code v1', 32));
  return (code) => createHmac('sha256', key).update(normalise(code)).digest('base64url');
}
