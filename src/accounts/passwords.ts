/**
 * Password hashing and checking (bcrypt, cost 10 as the bootstrap's admin password), and the
 * svc-secret keys a password lives under. A check against an account that has no hash still
 * runs one bcrypt comparison against a fixed dummy hash, so "no such user" and "wrong password"
 * take the same time.
 *
 * Native bcrypt, not bcryptjs: it hashes on libuv's thread pool, so a burst of logins does not
 * hold the event loop (and with it every proxied request) for 60 ms a hash; it is also faster.
 */
import bcrypt from 'bcrypt';
import { InvalidRequest } from '../errors.js';
import { ADMIN } from './config.js';

export const BCRYPT_COST = 10;
export const MIN_PASSWORD_LENGTH = 8;
/** bcrypt ignores every byte after the 72nd; a longer password would be silently truncated. */
export const MAX_PASSWORD_BYTES = 72;

/** A bcrypt hash (cost 10) of a random string nobody knows: compared against for unknown users. */
const DUMMY_HASH = '$2b$10$RyKZ/pWtgbcKTGgVvZ.U.OO2NIS7E3MF8o2GzOtkgiGIaOpWQ1RKi';

export async function verifyPassword(password: string, hash: string | undefined): Promise<boolean> {
  // Always exactly one comparison at the same cost, whatever the account looks like.
  const matches = await bcrypt.compare(password, hash ?? DUMMY_HASH).catch(() => false);
  return matches && hash !== undefined;
}

export function hashPassword(password: string): Promise<string> {
  return bcrypt.hash(password, BCRYPT_COST);
}

export function checkNewPassword(password: string): void {
  const bytes = Buffer.byteLength(password, 'utf8');
  if (password.length < MIN_PASSWORD_LENGTH || bytes > MAX_PASSWORD_BYTES) {
    throw new InvalidRequest(`the new password must be at least ${MIN_PASSWORD_LENGTH} characters and at most ${MAX_PASSWORD_BYTES} bytes long`);
  }
}

/** svc-secret keys of an account's password: `admin.*` for admin, `accounts.<name>.*` otherwise. */
export function passwordKeys(name: string): { readonly hash: string; readonly mtime: string } {
  const prefix = name === ADMIN ? ADMIN : `accounts.${name}`;
  return { hash: `${prefix}.password`, mtime: `${prefix}.passwordMtime` };
}
