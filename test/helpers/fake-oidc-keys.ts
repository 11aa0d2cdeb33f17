/**
 * What the workload issuer stand-ins share: an RS256 key pair with its public JWK (kid set),
 * signing of tokens with any header and claims (tests forge bad ones on purpose), and a
 * counter of key set fetches. Nothing here follows a platform; the stand-ins do.
 */
import { randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT, type JWK, type JWTPayload, type CryptoKey } from 'jose';

export interface SigningKey {
  readonly kid: string;
  readonly privateKey: CryptoKey;
  readonly publicJwk: JWK;
}

export async function makeSigningKey(kid: string = randomUUID()): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' };
  return { kid, privateKey, publicJwk };
}

/** A token signed by `key` with the given claims (no defaults: the stand-ins add theirs). */
export function signToken(key: SigningKey, claims: JWTPayload, header: Record<string, unknown> = {}): Promise<string> {
  return new SignJWT(claims).setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid: key.kid, ...header }).sign(key.privateKey);
}

/** The unsecured JWT (`alg: none`) of RFC 7519 §6: header and payload, empty signature. */
export function unsecuredToken(claims: JWTPayload): string {
  const part = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ alg: 'none', typ: 'JWT' })}.${part(claims)}.`;
}
