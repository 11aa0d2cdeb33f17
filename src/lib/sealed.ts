/**
 * Small values sealed with AES-256-GCM under a key derived from `server.secretkey` by HKDF,
 * one key per purpose (the login cookie, cached userinfo groups, kept refresh tokens, the bundled
 * provider's accounts with their upstream tokens): what
 * the browser or the state backend holds cannot be read or altered without svc's key.
 * A `context` (the `sub` of an account record, the key of an identity provider record) is bound
 * into the additional authenticated data: a value sealed for one context does not open under
 * another, so whoever can write the state backend cannot swap two records.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomFillSync } from 'node:crypto';
import { BoundedCache } from './bounded-cache.js';
import { secretKeyObject } from './secret-key.js';

export type SealPurpose = 'login-state' | 'userinfo-groups' | 'refresh-token' | 'access-token' | 'idp-account' | 'idp-record-id' | 'sso-token-identity' | 'mfa-totp';

export interface Sealer {
  seal(plain: string, context?: string): string;
  /** undefined when the value was not sealed with this key, purpose and context (or was altered). */
  open(sealed: string, context?: string): string | undefined;
}

const IV_BYTES = 12;
const TAG_BYTES = 16;
/** IVs drawn from the CSPRNG this many at a time: one call instead of one per seal. */
const IVS_PER_DRAW = 256;

export interface SealerOptions {
  /**
   * Remember up to this many values that opened (by sealed text and context), so the same
   * record read again is not decrypted again: for records read at every request of a chain (a
   * grant, an account). Identical input gives an identical answer (the key is fixed for the
   * sealer's life), and only values that opened are kept, so no answer changes. Bounded by
   * count (`rememberOpened`) and by characters (MEMO_MAX_WEIGHT); longer values are not kept.
   */
  readonly rememberOpened?: number;
}

/** Longer sealed values (and what they open to) are never remembered. */
const MEMO_MAX_CHARS = 4096;
/** The most characters the remembered values (sealed and opened) hold together: a few MB. */
const MEMO_MAX_WEIGHT = 2 * 1024 * 1024;

export function createSealer(secretKey: string, purpose: SealPurpose, options: SealerOptions = {}): Sealer {
  const key = secretKeyObject(hkdfSync('sha256', secretKey, 'svc-sso', `svc ${purpose} v1`, 32));
  const bare = Buffer.from(purpose);
  // Without a context the data is the purpose alone, as values sealed before contexts existed.
  const aad = (context: string | undefined): Buffer => (context === undefined ? bare : Buffer.from(`${purpose}\0${context}`, 'utf8'));
  const ivs = Buffer.alloc(IV_BYTES * IVS_PER_DRAW);
  let nextIv = ivs.length;
  const memo = options.rememberOpened === undefined ? undefined : new BoundedCache<string, string>(options.rememberOpened, { weight: { maxWeight: MEMO_MAX_WEIGHT, weigh: (k) => 2 * k.length } });

  function decrypt(raw: Buffer, context: string | undefined): string | undefined {
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_BYTES)).setAAD(aad(context));
      decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
    } catch {
      return undefined;
    }
  }

  return {
    seal(plain, context) {
      if (nextIv === ivs.length) {
        randomFillSync(ivs);
        nextIv = 0;
      }
      const text = Buffer.from(plain, 'utf8');
      // iv | tag | ciphertext, written in place (GCM's ciphertext is as long as the text).
      const out = Buffer.allocUnsafe(IV_BYTES + TAG_BYTES + text.length);
      ivs.copy(out, 0, nextIv, nextIv + IV_BYTES);
      // Each IV is used once: its bytes are overwritten before the pool is drawn from again.
      nextIv += IV_BYTES;
      const cipher = createCipheriv('aes-256-gcm', key, out.subarray(0, IV_BYTES)).setAAD(aad(context));
      const body = cipher.update(text);
      const last = cipher.final();
      body.copy(out, IV_BYTES + TAG_BYTES);
      last.copy(out, IV_BYTES + TAG_BYTES + body.length);
      cipher.getAuthTag().copy(out, IV_BYTES);
      return out.toString('base64url');
    },
    open(sealed, context) {
      // No context and an empty one are different additional data: their keys differ too.
      const memoKey = memo !== undefined && sealed.length <= MEMO_MAX_CHARS ? `${context === undefined ? '-' : `+${context}`}\0${sealed}` : undefined;
      if (memoKey !== undefined) {
        const known = memo?.get(memoKey);
        if (known !== undefined) return known;
      }
      const raw = Buffer.from(sealed, 'base64url');
      if (raw.length < IV_BYTES + TAG_BYTES) return undefined;
      const plain = decrypt(raw, context);
      if (memoKey !== undefined && plain !== undefined && plain.length <= MEMO_MAX_CHARS) memo?.set(memoKey, plain);
      return plain;
    },
  };
}
