/**
 * The keys Koa and oidc-provider sign cookies with, as an object with Keygrip's three methods
 * (both take one in place of a list of keys). The signatures are Keygrip's defaults exactly
 * (HMAC-SHA1 of the value, base64url without padding; the first key signs, every key listed
 * verifies), so cookies signed before keep verifying.
 *
 * Why not Keygrip: it hands createHmac the raw key at every call, and compares through tsscmp,
 * which HMACs both digests again under a fresh random key: three HMACs with raw keys per cookie
 * read, each raw key costing two thrown and caught errors on Node 24 (./secret-key.ts), and the
 * provider reads and writes its signed cookies several times per login. Here each key is a
 * KeyObject made once, and the comparison is timingSafeEqual of two strings of the same length
 * (the length compared first is the caller's own digest's, which tells nothing of the key).
 */
import { createHmac, timingSafeEqual, type KeyObject } from 'node:crypto';
import { secretKeyObject } from './secret-key.js';

export interface CookieKeys {
  sign(data: string): string;
  verify(data: string, digest: string): boolean;
  /** The position of the key that signed `data` with `digest`, -1 when none did. */
  index(data: string, digest: string): number;
}

export function createCookieKeys(keys: readonly string[]): CookieKeys {
  if (keys.length === 0) throw new Error('at least one cookie key is needed');
  const objects: readonly KeyObject[] = keys.map((key) => secretKeyObject(key));
  const signWith = (key: KeyObject, data: string): string => createHmac('sha1', key).update(data, 'utf8').digest('base64url');
  function index(data: string, digest: string): number {
    const given = Buffer.from(String(digest), 'utf8');
    for (let i = 0; i < objects.length; i++) {
      const expected = Buffer.from(signWith(objects[i] as KeyObject, data), 'utf8');
      if (given.length === expected.length && timingSafeEqual(given, expected)) return i;
    }
    return -1;
  }
  return {
    sign: (data) => signWith(objects[0] as KeyObject, data),
    verify: (data, digest) => index(data, digest) >= 0,
    index,
  };
}
