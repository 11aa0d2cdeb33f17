/**
 * Access tokens for the Admin SDK Directory API, through the service account's JWT grant
 * (RFC 7523 §2.1, as Google documents it for server-to-server applications with domain-wide
 * delegation): a JWT signed with the account's key, `iss` the account, `sub` the administrator it
 * acts as, `scope` the read-only groups scope, `aud` the token endpoint, exchanged there for an
 * access token. Each token is kept for its lifetime (less a margin), per administrator, in a
 * bounded cache: one grant an hour per administrator rather than one per login.
 */
import { createPrivateKey, type KeyObject } from 'node:crypto';
import { SignJWT } from 'jose';
import { UpstreamUnavailable } from '../errors.js';
import { readJson, send, type Upstream } from '../oauth2/http.js';
import type { ServiceAccountKey } from './service-account.js';

export const DIRECTORY_GROUP_SCOPE = 'https://www.googleapis.com/auth/admin.directory.group.readonly';
export const JWT_BEARER_GRANT = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
/** Google accepts an assertion of at most an hour. */
const ASSERTION_LIFETIME_S = 3600;
/** A token is dropped this long before it expires, so none expires during a login's requests. */
const EXPIRY_MARGIN_MS = 60_000;
/** When the answer names no lifetime: Google's tokens last an hour. */
const DEFAULT_LIFETIME_S = 3600;
/** Administrators whose tokens are kept at once (the config names a few; the bound holds whatever it names). */
export const MAX_CACHED_TOKENS = 64;

/** The sentence a person sees when the groups cannot be read, whatever the cause (the log says which). */
export const GROUPS_UNAVAILABLE = 'your groups could not be read from Google Workspace, so the login is refused; try again later, or ask an administrator to check the Google connector';

interface Cached {
  readonly token: string;
  readonly expiresAt: number;
}

export class DirectoryTokens {
  readonly #cache = new Map<string, Cached>();
  readonly #pending = new Map<string, Promise<string>>();
  readonly #signingKey: KeyObject;

  constructor(
    private readonly key: ServiceAccountKey,
    private readonly up: Upstream,
    private readonly now: () => Date,
  ) {
    this.#signingKey = createPrivateKey(key.privateKeyPem);
  }

  /** A token acting as `admin`: the cached one while it lasts, else a new grant (one at a time per admin). */
  async token(admin: string, signal: AbortSignal): Promise<string> {
    const cached = this.#cache.get(admin);
    if (cached !== undefined && cached.expiresAt > this.now().getTime()) return cached.token;
    this.#cache.delete(admin);
    const pending = this.#pending.get(admin);
    if (pending !== undefined) return pending;
    const grant = this.grant(admin, signal).finally(() => this.#pending.delete(admin));
    this.#pending.set(admin, grant);
    return grant;
  }

  /** Drops the token of `admin` (the API refused it: revoked, or delegation withdrawn). */
  forget(admin: string): void {
    this.#cache.delete(admin);
  }

  private async grant(admin: string, signal: AbortSignal): Promise<string> {
    const issuedAt = Math.floor(this.now().getTime() / 1000);
    const assertion = await new SignJWT({ scope: DIRECTORY_GROUP_SCOPE })
      .setProtectedHeader({ alg: 'RS256', typ: 'JWT', ...(this.key.privateKeyId !== undefined ? { kid: this.key.privateKeyId } : {}) })
      .setIssuer(this.key.clientEmail)
      .setSubject(admin)
      .setAudience(this.key.tokenUri)
      .setIssuedAt(issuedAt)
      .setExpirationTime(issuedAt + ASSERTION_LIFETIME_S)
      .sign(this.#signingKey);
    const what = 'the service account\'s token request (jwt-bearer)';
    let body: unknown;
    let status: number;
    try {
      const res = await send(this.up, what, this.key.tokenUri, {
        method: 'POST',
        headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: JWT_BEARER_GRANT, assertion }).toString(),
      }, signal);
      status = res.status;
      body = await readJson(this.up, what, res, signal);
    } catch (err: unknown) {
      throw new UpstreamUnavailable(GROUPS_UNAVAILABLE, { cause: err, reason: `${what} failed` });
    }
    const answer = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
    const token = answer['access_token'];
    if (status !== 200 || typeof token !== 'string' || token === '') {
      const error = typeof answer['error'] === 'string' ? answer['error'] : `HTTP ${status}`;
      const description = typeof answer['error_description'] === 'string' ? `: ${answer['error_description'].slice(0, 200)}` : '';
      const hint = error === 'unauthorized_client' ? ' (is domain-wide delegation granted to the service account\'s client id for the scope admin.directory.group.readonly?)' : '';
      throw new UpstreamUnavailable(GROUPS_UNAVAILABLE, { reason: `${what} acting as ${admin} was refused: ${error}${description}${hint}` });
    }
    const lifetime = typeof answer['expires_in'] === 'number' && answer['expires_in'] > 0 ? answer['expires_in'] : DEFAULT_LIFETIME_S;
    this.keep(admin, { token, expiresAt: this.now().getTime() + lifetime * 1000 - EXPIRY_MARGIN_MS });
    return token;
  }

  private keep(admin: string, entry: Cached): void {
    if (this.#cache.size >= MAX_CACHED_TOKENS) {
      const oldest = this.#cache.keys().next();
      if (oldest.done !== true) this.#cache.delete(oldest.value);
    }
    this.#cache.set(admin, entry);
  }
}
