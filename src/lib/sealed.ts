/**
 * Small values sealed with AES-256-GCM under a key derived from `server.secretkey` by HKDF,
 * one key per purpose (the login cookie, cached userinfo groups, kept refresh tokens, the bundled
 * provider's accounts with their upstream tokens): what
 * the browser or the state backend holds cannot be read or altered without svc's key.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

export type SealPurpose = 'login-state' | 'userinfo-groups' | 'refresh-token' | 'access-token' | 'idp-account';

export interface Sealer {
  seal(plain: string): string;
  /** undefined when the value was not sealed with this key and purpose (or was altered). */
  open(sealed: string): string | undefined;
}

const IV_BYTES = 12;
const TAG_BYTES = 16;

export function createSealer(secretKey: string, purpose: SealPurpose): Sealer {
  const key = Buffer.from(hkdfSync('sha256', secretKey, 'svc-sso', `svc ${purpose} v1`, 32));
  const aad = Buffer.from(purpose);
  return {
    seal(plain) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, iv).setAAD(aad);
      const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
    },
    open(sealed) {
      const raw = Buffer.from(sealed, 'base64url');
      if (raw.length < IV_BYTES + TAG_BYTES) return undefined;
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_BYTES)).setAAD(aad);
        decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
        return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
      } catch {
        return undefined;
      }
    },
  };
}
