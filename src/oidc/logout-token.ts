/**
 * An OIDC Back-Channel Logout 1.0 logout token (§2.4, checked as §2.6 says), as a pipeline of
 * named checks after the signature: the provider's keys, its issuer, svc's client id as an
 * audience, `iat` present and recent, the `events` claim with the back-channel logout event,
 * no `nonce` (so an ID token is never taken for one), `sub` or `sid`, and a `jti` not seen
 * before: a replay mark per (issuer, jti) in the state backend, shared by replicas, kept as long
 * as such a token could still be accepted. Only a token the provider signed makes a mark, so
 * nobody else can fill the store. Knows nothing of HTTP or of sessions.
 */
import { createHash } from 'node:crypto';
import { errors as joseErrors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { Unavailable } from '../errors.js';
import type { StateBackend } from '../state/state.js';

export const BACKCHANNEL_LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout';
/** A logout token is sent when the logout happens: one older than this is refused, so replay marks need live no longer. */
export const MAX_LOGOUT_TOKEN_AGE_SECONDS = 600;
export const LOGOUT_CLOCK_SKEW_SECONDS = 30;
/** The longest text taken for a claim used as a key or logged (`sid`, `sub`, `jti`). */
const MAX_CLAIM_LENGTH = 512;

/** A refused logout token; the message is safe to show (it never quotes the token). */
export class LogoutTokenRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LogoutTokenRefused';
  }
}

export interface LogoutTokenDeps {
  readonly issuer: string;
  /** svc's client id at the provider: the token's `aud` must name it. */
  readonly clientId: string;
  readonly keys: () => Promise<JWTVerifyGetKey>;
  readonly state: Pick<StateBackend, 'setIfAbsent'>;
  readonly now: () => number;
}

/** What a verified logout token asks to end: the provider's session `sid`, or every session of `sub`. */
export interface LogoutRequest {
  readonly sub?: string;
  readonly sid?: string;
  readonly jti: string;
}

type Check = (payload: JWTPayload, nowSeconds: number) => void;

const checks: readonly Check[] = [
  function hasRecentIat(payload, nowSeconds) {
    if (typeof payload.iat !== 'number') throw new LogoutTokenRefused('the logout token has no iat');
    if (payload.iat > nowSeconds + LOGOUT_CLOCK_SKEW_SECONDS) throw new LogoutTokenRefused('the logout token is issued in the future (iat)');
    if (payload.iat < nowSeconds - MAX_LOGOUT_TOKEN_AGE_SECONDS) throw new LogoutTokenRefused(`the logout token is older than ${MAX_LOGOUT_TOKEN_AGE_SECONDS} s (iat)`);
  },
  function hasLogoutEvent(payload) {
    const events = payload['events'];
    if (typeof events !== 'object' || events === null || Array.isArray(events)) throw new LogoutTokenRefused('the logout token has no events claim');
    const event: unknown = (events as Record<string, unknown>)[BACKCHANNEL_LOGOUT_EVENT];
    if (typeof event !== 'object' || event === null || Array.isArray(event)) throw new LogoutTokenRefused(`the logout token's events claim has no ${BACKCHANNEL_LOGOUT_EVENT} object`);
  },
  function hasNoNonce(payload) {
    if (payload['nonce'] !== undefined) throw new LogoutTokenRefused('the logout token has a nonce (an ID token is not a logout token)');
  },
  function namesSubOrSid(payload) {
    const sub = payload.sub;
    const sid = payload['sid'];
    if (sub !== undefined && (typeof sub !== 'string' || sub === '' || sub.length > MAX_CLAIM_LENGTH)) throw new LogoutTokenRefused('the logout token\'s sub is not a short string');
    if (sid !== undefined && (typeof sid !== 'string' || sid === '' || sid.length > MAX_CLAIM_LENGTH)) throw new LogoutTokenRefused('the logout token\'s sid is not a short string');
    if (sub === undefined && sid === undefined) throw new LogoutTokenRefused('the logout token names neither sub nor sid');
  },
  function hasJti(payload) {
    if (typeof payload.jti !== 'string' || payload.jti === '' || payload.jti.length > MAX_CLAIM_LENGTH) throw new LogoutTokenRefused('the logout token has no jti');
  },
];

export async function verifyLogoutToken(deps: LogoutTokenDeps, token: string): Promise<LogoutRequest> {
  const nowMs = deps.now();
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(token, await deps.keys(), {
      issuer: deps.issuer,
      audience: deps.clientId,
      clockTolerance: LOGOUT_CLOCK_SKEW_SECONDS,
      currentDate: new Date(nowMs),
    }));
  } catch (err: unknown) {
    throw refusal(err);
  }
  const nowSeconds = Math.floor(nowMs / 1000);
  for (const check of checks) check(payload, nowSeconds);
  const jti = payload.jti as string;
  await markUsed(deps, jti, payload, nowSeconds);
  return {
    jti,
    ...(typeof payload.sub === 'string' ? { sub: payload.sub } : {}),
    ...(typeof payload['sid'] === 'string' ? { sid: payload['sid'] } : {}),
  };
}

/** The replay mark, kept while the token could still pass the iat rule: no longer, so marks expire. */
async function markUsed(deps: LogoutTokenDeps, jti: string, payload: JWTPayload, nowSeconds: number): Promise<void> {
  const untilSeconds = (payload.iat as number) + MAX_LOGOUT_TOKEN_AGE_SECONDS + LOGOUT_CLOCK_SKEW_SECONDS;
  const ttlMs = Math.max(1, untilSeconds - nowSeconds) * 1000;
  const key = `backchannel-jti:${createHash('sha256').update(`${deps.issuer}\n${jti}`).digest('base64url')}`;
  if (!(await deps.state.setIfAbsent(key, '1', { ttlMs }))) throw new LogoutTokenRefused('the logout token was used before (jti)');
}

function refusal(err: unknown): Error {
  if (err instanceof Unavailable) return err;
  if (err instanceof joseErrors.JWTClaimValidationFailed) return new LogoutTokenRefused(`the logout token's ${err.claim} is not accepted: ${err.message}`);
  if (err instanceof joseErrors.JWTExpired) return new LogoutTokenRefused('the logout token has expired');
  if (err instanceof joseErrors.JWKSTimeout || err instanceof joseErrors.JWKSInvalid) return new Unavailable('the keys of the OIDC provider cannot be read', { cause: err });
  if (err instanceof joseErrors.JOSEError) return new LogoutTokenRefused(`the logout token is invalid: ${err.code}`);
  return new Unavailable('the keys of the OIDC provider cannot be read', { cause: err });
}
