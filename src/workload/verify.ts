/**
 * The checks a subject token goes through, each with a name that the refusal carries (RFC 6749
 * error_description "check 'aud' failed: …"), in this order:
 *
 *   read:   size, format, iss (which configured issuer)       — opens nothing, not throttled
 *   signature: alg, key, signature, signed iss                — anyone can fail these without the key
 *   claims: aud, exp, nbf, iat, the entry's conditions         — only the token's holder can fail these
 *
 * The caller throttles the two stages apart (exchange.ts): a failure before the signature holds
 * says nothing about the `sub` it names.
 *
 * Algorithms are the issuer's published ones that are asymmetric (keys.ts), checked against the
 * header before any key is looked at, so `alg: none` and HS256 "signed" with the issuer's public
 * key are refused by name. Times allow svc's clock skew (CLOCK_SKEW_SECONDS) both ways. A message
 * never quotes the token; it quotes at most a short, bounded piece of a claim.
 */
import { base64url, compactVerify, decodeProtectedHeader, errors as joseErrors, type JWSHeaderParameters } from 'jose';
import { InvalidRequest } from '../errors.js';
import { CLOCK_SKEW_SECONDS } from '../oidc/sso-verifier.js';
import { createGlobMatch } from '../rbac/glob.js';
import { claimAt, formatClaimPath, scalarText } from './claim-path.js';
import type { ClaimCondition, WorkloadIssuer } from './config.js';
import type { IssuerKeys } from './keys.js';

/** GitHub's and Kubernetes' tokens are 1-2 KiB; anything this large is refused unread. */
export const MAX_SUBJECT_TOKEN_BYTES = 16 * 1024;
/** A subject token living longer than this is refused: its replay record would outlive any CI job. */
export const MAX_SUBJECT_TOKEN_REMAINING_SECONDS = 24 * 3600;

export type WorkloadCheck =
  | 'request' | 'size' | 'format' | 'iss' | 'alg' | 'key' | 'signature' | 'aud' | 'exp' | 'nbf' | 'iat' | 'claims' | 'subject' | 'replay';

/** A subject token refused by one named check: 400 invalid_request. */
export class WorkloadRefused extends InvalidRequest {
  constructor(readonly check: WorkloadCheck, detail: string) {
    super(`check '${check}' failed: ${detail}`);
  }
}

export type Claims = Readonly<Record<string, unknown>>;

export interface ReadToken {
  readonly token: string;
  readonly entry: WorkloadIssuer;
  readonly header: JWSHeaderParameters;
  /** Unverified: only for routing and the throttle's key. */
  readonly unverified: Claims;
}

export interface VerifiedToken {
  readonly entry: WorkloadIssuer;
  readonly claims: Claims;
  readonly exp: number;
}

const glob = createGlobMatch(1_000);

export function readSubjectToken(token: string, issuers: readonly WorkloadIssuer[]): ReadToken {
  if (Buffer.byteLength(token) > MAX_SUBJECT_TOKEN_BYTES) throw new WorkloadRefused('size', `the subject token is larger than ${MAX_SUBJECT_TOKEN_BYTES} bytes`);
  const parts = token.split('.');
  if (parts.length !== 3) throw new WorkloadRefused('format', 'the subject token is not a signed JWT (three base64url parts)');
  let header: JWSHeaderParameters;
  let unverified: unknown;
  try {
    header = decodeProtectedHeader(token);
    unverified = JSON.parse(Buffer.from(parts[1] as string, 'base64url').toString('utf8'));
  } catch {
    throw new WorkloadRefused('format', 'the subject token is not a JWT (its header or payload is not base64url JSON)');
  }
  if (typeof unverified !== 'object' || unverified === null || Array.isArray(unverified)) throw new WorkloadRefused('format', 'the subject token\'s payload is not a JSON object');
  const iss = (unverified as Claims)['iss'];
  if (typeof iss !== 'string') throw new WorkloadRefused('iss', 'the subject token has no iss claim');
  const entry = issuers.find((e) => e.issuer === iss);
  if (entry === undefined) throw new WorkloadRefused('iss', `no workload issuer is configured for iss '${shorten(iss)}'`);
  return { token, entry, header, unverified: unverified as Claims };
}

/**
 * The checks before the signature holds (alg, key, signature, the signed iss): what anyone can
 * fail without the issuer's key. Answers the signed claims.
 */
export async function verifySignature(read: ReadToken, keys: IssuerKeys): Promise<Claims> {
  const { entry, header } = read;
  const algorithms = await keys.algorithms();
  const alg = typeof header.alg === 'string' ? header.alg : '(none)';
  if (!algorithms.includes(alg)) {
    throw new WorkloadRefused('alg', `alg '${shorten(alg)}' is not one the issuer '${entry.name}' publishes and svc accepts (${algorithms.join(', ') || 'none'})`);
  }
  const found = await keys.keyFor(header);
  if ('missing' in found) throw new WorkloadRefused('key', found.missing);
  let payload: Uint8Array;
  try {
    ({ payload } = await compactVerify(read.token, found.key, { algorithms: [...algorithms] }));
  } catch (err: unknown) {
    if (err instanceof joseErrors.JOSEError) throw new WorkloadRefused('signature', `the signature does not verify with the issuer's key (${err.code})`);
    throw err;
  }
  let claims: unknown;
  try {
    claims = JSON.parse(new TextDecoder().decode(payload));
  } catch {
    throw new WorkloadRefused('format', 'the signed payload is not JSON');
  }
  if (typeof claims !== 'object' || claims === null || Array.isArray(claims)) throw new WorkloadRefused('format', 'the signed payload is not a JSON object');
  if ((claims as Claims)['iss'] !== entry.issuer) throw new WorkloadRefused('iss', 'the signed iss differs from the issuer the token was routed to');
  return claims as Claims;
}

/** The checks of signed claims (aud, exp, nbf, iat, the entry's conditions): only the token's holder can fail these. */
export function checkSignedClaims(entry: WorkloadIssuer, claims: Claims, nowMs: number): VerifiedToken {
  checkAudience(claims, entry);
  const exp = checkTimes(claims, nowMs);
  checkClaims(claims, entry);
  return { entry, claims, exp };
}

/**
 * The signature as bytes, decoded as jose decodes it to verify: the last base64url character
 * carries unused bits, so several spellings of one signature verify; the bytes are one.
 */
export function signatureBytes(token: string): string {
  return Buffer.from(base64url.decode(token.slice(token.lastIndexOf('.') + 1))).toString('base64url');
}

function checkAudience(claims: Claims, entry: WorkloadIssuer): void {
  const aud = claims['aud'];
  const audiences = typeof aud === 'string' ? [aud] : Array.isArray(aud) ? aud.filter((a): a is string => typeof a === 'string') : [];
  if (audiences.length === 0) throw new WorkloadRefused('aud', 'the subject token has no aud claim');
  if (!audiences.some((a) => entry.audiences.includes(a))) {
    throw new WorkloadRefused('aud', `the token's audience is none of those workload issuer '${entry.name}' accepts`);
  }
}

/** exp, nbf and iat with the skew; exp and iat are required. */
function checkTimes(claims: Claims, nowMs: number): number {
  const now = Math.floor(nowMs / 1000);
  const { exp, nbf, iat } = claims;
  if (typeof exp !== 'number') throw new WorkloadRefused('exp', 'the subject token has no numeric exp claim');
  if (exp + CLOCK_SKEW_SECONDS <= now) throw new WorkloadRefused('exp', 'the subject token has expired');
  if (exp - now > MAX_SUBJECT_TOKEN_REMAINING_SECONDS) throw new WorkloadRefused('exp', 'the subject token expires more than 24h from now; ask the issuer for a shorter-lived token');
  if (nbf !== undefined && typeof nbf !== 'number') throw new WorkloadRefused('nbf', 'the nbf claim is not a number');
  if (typeof nbf === 'number' && nbf - CLOCK_SKEW_SECONDS > now) throw new WorkloadRefused('nbf', 'the subject token is not valid yet');
  if (typeof iat !== 'number') throw new WorkloadRefused('iat', 'the subject token has no numeric iat claim');
  if (iat - CLOCK_SKEW_SECONDS > now) throw new WorkloadRefused('iat', 'the subject token is issued in the future');
  return exp;
}

/** Every condition must hold; the first that does not is named (the value goes only to the log). */
function checkClaims(claims: Claims, entry: WorkloadIssuer): void {
  for (const condition of entry.claims) {
    if (!holds(condition, claims)) throw new WorkloadRefused('claims', `claim '${formatClaimPath(condition.path)}' ${describeCondition(condition)}`);
  }
}

function holds(condition: ClaimCondition, claims: Claims): boolean {
  const value = scalarText(claimAt(claims, condition.path));
  if (value === undefined) return false;
  if (condition.equals !== undefined) return value === condition.equals;
  return (condition.globs ?? []).some((pattern) => glob(value, pattern));
}

function describeCondition(condition: ClaimCondition): string {
  return condition.equals !== undefined ? `is not '${condition.equals}'` : `matches none of ${condition.globs?.map((g) => `'${g}'`).join(', ')}`;
}

/** A claim's value for a log line: bounded. */
export function shorten(value: string, max = 80): string {
  return value.length > max ? `${value.slice(0, max)}…` : value;
}
