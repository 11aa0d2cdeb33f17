/**
 * Small values sealed with AES-256-GCM under a key derived from `server.secretkey` by HKDF,
 * one key per purpose (the login cookie, cached userinfo groups, kept refresh tokens, the bundled
 * provider's accounts with their upstream tokens): what
 * the browser or the state backend holds cannot be read or altered without svc's key.
 * A `context` (the `sub` of an account record, the key of an identity provider record) is bound
 * into the additional authenticated data: a value sealed for one context does not open under
 * another, so whoever can write the state backend cannot swap two records.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { secretKeyObject } from './secret-key.js';

export type SealPurpose = 'login-state' | 'userinfo-groups' | 'refresh-token' | 'access-token' | 'idp-account' | 'idp-record-id' | 'mfa-totp';

export interface Sealer {
  seal(plain: string, context?: string): string;
  /** undefined when the value was not sealed with this key, purpose and context (or was altered). */
  open(sealed: string, context?: string): string | undefined;
}

const IV_BYTES = 12;
const TAG_BYTES = 16;

export function createSealer(secretKey: string, purpose: SealPurpose): Sealer {
  const key = secretKeyObject(hkdfSync('sha256', secretKey, 'svc-sso', `svc ${purpose} v1`, 32));
  const bare = Buffer.from(purpose);
  // Without a context the data is the purpose alone, as values sealed before contexts existed.
  const aad = (context: string | undefined): Buffer => (context === undefined ? bare : Buffer.from(`${purpose}\0${context}`, 'utf8'));
  return {
    seal(plain, context) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, iv).setAAD(aad(context));
      const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
    },
    open(sealed, context) {
      const raw = Buffer.from(sealed, 'base64url');
      if (raw.length < IV_BYTES + TAG_BYTES) return undefined;
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_BYTES)).setAAD(aad(context));
        decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
        return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
      } catch {
        return undefined;
      }
    },
  };
}
