/**
 * TOTP as every authenticator app reads it (RFC 6238): SHA-1, 6 digits, 30 s steps, one step
 * of skew either way. The HOTP arithmetic is otpauth's (a well-kept library, not our own);
 * this file fixes the parameters and answers which time step a code belongs to, so that
 * totp-replay.ts can accept each step at most once.
 */
import { Secret, TOTP } from 'otpauth';

export const TOTP_PERIOD_SECONDS = 30;
export const TOTP_DIGITS = 6;
/** Steps of clock skew accepted either way. */
export const TOTP_SKEW_STEPS = 1;
/** 160 bits, RFC 4226's recommended secret length. */
const SECRET_BYTES = 20;
const CODE = /^\d{6}$/;

/** A fresh secret, base32 as authenticator apps take it. */
export function newTotpSecret(): string {
  return new Secret({ size: SECRET_BYTES }).base32;
}

function totp(secretBase32: string, account = '', issuer = ''): TOTP {
  return new TOTP({ issuer, label: account, algorithm: 'SHA1', digits: TOTP_DIGITS, period: TOTP_PERIOD_SECONDS, secret: Secret.fromBase32(secretBase32) });
}

/** The `otpauth://totp/...` URI an authenticator app scans (issuer: svc's host, so two servers' entries differ). */
export function totpUri(secretBase32: string, account: string, issuer: string): string {
  return totp(secretBase32, account, issuer).toString();
}

/** Whether a string has the shape of a TOTP code (six digits), not of a recovery code. */
export function isTotpCode(code: string): boolean {
  return CODE.test(code);
}

/** The time step of `nowMs`. */
export function totpStep(nowMs: number): number {
  return Math.floor(nowMs / 1000 / TOTP_PERIOD_SECONDS);
}

/** The time step whose code `code` is (within the skew), or undefined when it matches none. */
export function matchingStep(secretBase32: string, code: string, nowMs: number): number | undefined {
  if (!isTotpCode(code)) return undefined;
  const delta = totp(secretBase32).validate({ token: code, timestamp: nowMs, window: TOTP_SKEW_STEPS });
  return delta === null ? undefined : totpStep(nowMs) + delta;
}

/** The code of a time step (tests and the CLI's own checks compute codes with it). */
export function codeAt(secretBase32: string, nowMs: number): string {
  return totp(secretBase32).generate({ timestamp: nowMs });
}
