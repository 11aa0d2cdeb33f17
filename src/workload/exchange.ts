/**
 * The token exchange (RFC 8693) for workloads, as a pipeline: the request's shape -> read the
 * subject token (size, format, which issuer) -> throttle (counts the attempt, or refuses it,
 * as a login does) -> verify (alg, key, signature, aud, times, claim conditions) -> who it is
 * -> mark it exchanged (at most once, in the shared state backend) -> a svc token.
 *
 * Two throttle names, one per stage of verify.ts, so that nobody can lock an identity without
 * its issuer's key:
 * - before the signature holds (alg, key, signature), an attempt counts under the issuer entry
 *   and the caller's address, `exchange-from:<entry>:<address>`: a `sub` nobody has signed yet is
 *   anyone's to write, so a forger fills only its own address's budget;
 * - after it (aud, times, claims, replay), under the entry and a hash of the signed `sub`,
 *   `exchange:<entry>:<hash>`: failures of one CI job's identity lock that identity, as failed
 *   passwords lock a user name.
 * A token that passes the first stage hands its address's attempt back (it was no failure) and
 * does not clear the address's earlier failures. A refusal waits 0.5-1 s, as a failed login
 * does. An issuer that cannot be reached uncounts the attempt and answers 503: the token could
 * not be checked.
 *
 * The svc token lives at most the entry's maxTokenLifetime, and never past the subject token's
 * own expiry plus that lifetime.
 */
import type { LoginOutcomes } from '../session/login-outcomes.js';
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { InvalidRequest, TooManyAttempts, Unavailable } from '../errors.js';
import { CLOCK_SKEW_SECONDS } from '../oidc/sso-verifier.js';
import { randomFailureDelay } from '../session/login.js';
import type { LoginThrottle } from '../session/throttle.js';
import { StateUnavailable, type StateBackend } from '../state/state.js';
import type { WorkloadIssuer } from './config.js';
import { identify } from './identify.js';
import type { IssuerKeys } from './keys.js';
import type { WorkloadTokens } from './tokens.js';
import { checkSignedClaims, readSubjectToken, shorten, signatureBytes, verifySignature, WorkloadRefused, type Claims, type ReadToken, type VerifiedToken } from './verify.js';

export const GRANT_TYPE_TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
export const TOKEN_TYPE_JWT = 'urn:ietf:params:oauth:token-type:jwt';
export const TOKEN_TYPE_ID_TOKEN = 'urn:ietf:params:oauth:token-type:id_token';
export const TOKEN_TYPE_ACCESS_TOKEN = 'urn:ietf:params:oauth:token-type:access_token';
const SUBJECT_TOKEN_TYPES: readonly string[] = [TOKEN_TYPE_JWT, TOKEN_TYPE_ID_TOKEN];
const REPLAY_PREFIX = 'workload-exchanged:';
const SOURCE_PREFIX = 'exchange-from:';

/** Any grant_type but token exchange: RFC 6749's unsupported_grant_type. */
export class UnsupportedGrantType extends InvalidRequest {}

export interface ExchangeRequest {
  readonly grantType: string | undefined;
  readonly subjectToken: string | undefined;
  readonly subjectTokenType: string | undefined;
  readonly requestedTokenType: string | undefined;
  readonly actorToken: string | undefined;
  /** The caller's address (as the app's proxy settings give it): the key of failures before the signature holds. */
  readonly clientIp: string;
}

export interface ExchangeResult {
  readonly accessToken: string;
  readonly issuedTokenType: string;
  readonly expiresIn: number;
  readonly username: string;
  /** The svc token's jti and expiry (seconds since the epoch): the session's in the registry. */
  readonly tokenId: string;
  readonly expiresAt: number;
}

export interface ExchangeDeps {
  readonly issuers: () => readonly WorkloadIssuer[];
  readonly keysOf: (entry: WorkloadIssuer) => IssuerKeys;
  readonly tokens: WorkloadTokens;
  readonly state: StateBackend;
  readonly throttle: Pick<LoginThrottle, 'admit' | 'release' | 'recordFailure' | 'recordSuccess'>;
  readonly localAccounts: () => ReadonlyMap<string, unknown>;
  readonly log: Pick<Logger, 'info' | 'warn'>;
  readonly now: () => number;
  /** Injected so tests run fast; the default waits 0.5-1 s as a failed login. */
  readonly failureDelay?: () => Promise<void>;
  /** Counts each exchange's outcome (svc_login_outcomes_total, method workload, the entry as connector). */
  readonly outcomes?: LoginOutcomes;
}

export type Exchange = (request: ExchangeRequest) => Promise<ExchangeResult>;

export function createExchange(deps: ExchangeDeps): Exchange {
  const delay = deps.failureDelay ?? randomFailureDelay;

  /**
   * Runs one stage under the throttle's `name`: a refusal counts as a failure (and waits), any
   * other error uncounts the attempt; `passed` settles an attempt the stage let through.
   */
  async function throttled<T>(name: string, read: ReadToken, clientIp: string, stage: () => Promise<T>, passed: (name: string) => Promise<void>): Promise<T> {
    const attempt = await deps.throttle.admit(name).catch((err: unknown) => {
      // The route names a workload's lockout; an address's is another lock, said so here.
      if (err instanceof TooManyAttempts && name.startsWith(SOURCE_PREFIX)) err.message = err.message.replace('failed logins', 'refused subject tokens from this address');
      throw err;
    });
    let result: T;
    try {
      result = await stage();
    } catch (err: unknown) {
      if (!(err instanceof WorkloadRefused)) {
        await deps.throttle.release(name);
        throw err;
      }
      await deps.throttle.recordFailure(name, attempt);
      deps.outcomes?.record('workload', read.entry.name, err.check === 'replay' ? 'refused' : 'invalid-token', { detail: err.message, source: { ip: clientIp } });
      deps.log.info({ entry: read.entry.name, check: err.check, reason: err.message, sub: shortClaim(read.unverified['sub']), clientIp }, 'workload token exchange refused');
      await delay();
      throw err;
    }
    await passed(name);
    return result;
  }

  /**
   * The signature, throttled per issuer and address; then, throttled per signed `sub`, every
   * check of the claims, the svc token (signed before the token is marked exchanged: a missing
   * server.secretkey must not use up the subject token) and the mark, whose refusal counts.
   */
  async function admitAndIssue(read: ReadToken, clientIp: string): Promise<ExchangeResult> {
    const signed = await throttled(sourceName(read.entry, clientIp), read, clientIp, () => verifySignature(read, deps.keysOf(read.entry)), (name) => deps.throttle.release(name));
    return throttled(subjectName(read.entry, signed), read, clientIp, async () => {
      const verified = checkSignedClaims(read.entry, signed, deps.now());
      const who = identify(read.entry, verified.claims, deps.localAccounts().keys());
      for (const { group, reason } of who.dropped) {
        deps.log.warn({ entry: read.entry.name, username: who.username, group: shorten(group) }, `workload group '${shorten(group)}' dropped: ${reason}`);
      }
      const issued = await issue(read.entry, verified, who.username, who.groups);
      await markExchanged(read, verified);
      deps.outcomes?.record('workload', read.entry.name, 'ok', { user: who.username, userId: who.username, groups: who.groups, source: { ip: clientIp } });
      deps.log.info({ entry: read.entry.name, username: who.username, groups: who.groups, jti: issued.jti, expiresAt: issued.exp }, 'workload token exchanged');
      return { accessToken: issued.token, issuedTokenType: TOKEN_TYPE_ACCESS_TOKEN, expiresIn: issued.expiresIn, username: who.username, tokenId: issued.jti, expiresAt: issued.exp };
    }, (name) => deps.throttle.recordSuccess(name));
  }

  /** For at most maxTokenLifetime, and never past the subject token's expiry plus that lifetime. */
  async function issue(entry: WorkloadIssuer, verified: VerifiedToken, username: string, groups: readonly string[]) {
    const now = Math.floor(deps.now() / 1000);
    const lifetime = Math.floor(entry.maxTokenLifetimeMs / 1000);
    const exp = Math.min(now + lifetime, verified.exp + lifetime);
    const { token, jti } = await deps.tokens.issue({ username, groups, entry: entry.name, iat: now, exp });
    return { token, jti, exp, expiresIn: exp - now };
  }

  /**
   * At most once per subject token: its issuer and jti (or, without a jti, its signature as
   * bytes: a respelt last character of the text verifies too), hashed, are kept until the token
   * can no longer be accepted, its exp plus the clock skew. Keyed by the issuer, not the entry's
   * name, so renaming an entry does not make its tokens new.
   */
  async function markExchanged(read: ReadToken, verified: VerifiedToken): Promise<void> {
    const jti = verified.claims['jti'];
    const id = typeof jti === 'string' && jti !== '' ? `jti:${jti}` : `signature:${signatureBytes(read.token)}`;
    const key = `${REPLAY_PREFIX}${createHash('sha256').update(`${read.entry.issuer}\n${id}`).digest('base64url')}`;
    const ttlMs = Math.max(1000, (verified.exp + CLOCK_SKEW_SECONDS) * 1000 - deps.now());
    let first: boolean;
    try {
      first = await deps.state.setIfAbsent(key, String(deps.now()), { ttlMs });
    } catch (err: unknown) {
      if (err instanceof StateUnavailable) throw new Unavailable('the state backend is unreachable: svc cannot tell whether this subject token was exchanged before', { cause: err });
      throw err;
    }
    if (!first) throw new WorkloadRefused('replay', 'this subject token was exchanged before; a subject token is exchanged at most once');
  }

  return async function exchange(request) {
    const subjectToken = checkRequest(request);
    return admitAndIssue(readSubjectToken(subjectToken, deps.issuers()), request.clientIp);
  };
}

/** The request's parameters (RFC 8693 §2.1); the subject token when they are right. */
function checkRequest(request: ExchangeRequest): string {
  if (request.grantType !== GRANT_TYPE_TOKEN_EXCHANGE) {
    throw new UnsupportedGrantType(`grant_type must be ${GRANT_TYPE_TOKEN_EXCHANGE}`);
  }
  if (request.subjectToken === undefined || request.subjectToken === '') throw new WorkloadRefused('request', 'subject_token is required');
  if (request.subjectTokenType === undefined || !SUBJECT_TOKEN_TYPES.includes(request.subjectTokenType)) {
    throw new WorkloadRefused('request', `subject_token_type must be ${SUBJECT_TOKEN_TYPES.join(' or ')}`);
  }
  if (request.requestedTokenType !== undefined && request.requestedTokenType !== TOKEN_TYPE_ACCESS_TOKEN) {
    throw new WorkloadRefused('request', `requested_token_type can only be ${TOKEN_TYPE_ACCESS_TOKEN}`);
  }
  if (request.actorToken !== undefined) throw new WorkloadRefused('request', 'actor_token is not supported (no delegation)');
  return request.subjectToken;
}

/** Failures before the signature holds: the issuer entry and the caller's address (no `:` in a local account name). */
function sourceName(entry: WorkloadIssuer, clientIp: string): string {
  return `${SOURCE_PREFIX}${entry.name}:${clientIp}`;
}

/** Failures after it: the entry and the signed `sub`, hashed (bounded, whatever the issuer writes). */
function subjectName(entry: WorkloadIssuer, signed: Claims): string {
  const sub = typeof signed['sub'] === 'string' ? signed['sub'] : '';
  return `exchange:${entry.name}:${createHash('sha256').update(sub).digest('base64url').slice(0, 22)}`;
}

function shortClaim(value: unknown): string | undefined {
  return typeof value === 'string' ? shorten(value) : undefined;
}
