/**
 * The upstream OIDC connector (Dex's `oidc`): the browser goes to the upstream with PKCE and a
 * nonce, comes back to `<url>/api/idp/callback` with a code, and openid-client exchanges it and
 * verifies the ID token (signature through the JWKS, issuer, audience, nonce, expiry). Refresh
 * redeems the upstream's refresh token, kept in the identity's connectorData, so a user the
 * upstream no longer vouches for gets no new tokens.
 *
 * Every HTTP request (discovery, token, userinfo, JWKS) goes through the one upstream fetch (the
 * TLS policy and its log lines) with the login's signal, so a slow upstream ends the login at
 * the login's deadline. Loaded on the first login (./lazy.ts): parsing never loads openid-client.
 */
import { createRemoteJWKSet, customFetch, type JWTVerifyGetKey } from 'jose';
import * as client from 'openid-client';
import { PermissionDenied } from '../../src/errors.js';
import { describeFailure } from '../../src/lib/tls-fetch.js';
import type { BrowserConnector, BrowserStart, ConnectorDeps, Identity, LoginContext } from '../connector.js';
import { UpstreamMisconfigured, UpstreamUnavailable } from '../errors.js';
import { ClaimProblem, identityFromClaims, type Claims } from './claims.js';
import type { OidcConnectorConfig } from './config.js';
import { discover } from './discovery.js';
import { pkceMethodFor, scopeFor, secretInBodyFor } from './request.js';

/** Kept server-side between begin() and complete(), single use. */
interface Saved {
  readonly state: string;
  readonly verifier: string;
  readonly method: 'S256' | 'plain';
  readonly nonce: string;
}

/** What refresh() needs: the upstream's refresh token and the subject it was issued for. */
interface RefreshData {
  readonly refreshToken: string;
  readonly sub: string;
}

/** How long discovery may take when a logout token needs the upstream's keys. */
const LOGOUT_DISCOVERY_TIMEOUT_MS = 10_000;
/** An unknown `kid` in a logout token fetches the upstream's JWKS again at most this often. */
const LOGOUT_JWKS_COOLDOWN_MS = 5_000;
/** The longest upstream `sub` or `sid` kept for back-channel logout (as the logout token's own bound). */
const MAX_SESSION_CLAIM_LENGTH = 512;

const NOT_CONFIRMED = 'the identity provider did not confirm this login; start again from the application';

export class OidcConnector implements BrowserConnector {
  readonly kind = 'browser';
  private discovery: Promise<client.ServerMetadata> | undefined;
  private jwks: client.ExportedJWKSCache | undefined;
  /** How the client secret travels: true in the body, false in a Basic header, undefined: Basic until the provider refuses it. */
  private secretInBody: boolean | undefined;
  private readonly asksEmail: boolean;
  private logoutJwks: JWTVerifyGetKey | undefined;

  constructor(
    private readonly config: OidcConnectorConfig,
    private readonly deps: ConnectorDeps,
    private readonly fetchImpl: typeof globalThis.fetch,
  ) {
    this.asksEmail = config.scopes.includes('email');
  }

  async begin(state: string, ctx: LoginContext): Promise<BrowserStart> {
    const cfg = await this.configuration(ctx.signal);
    const metadata = cfg.serverMetadata();
    const method = pkceMethodFor(this.config, metadata);
    const verifier = client.randomPKCECodeVerifier();
    const nonce = client.randomNonce();
    const offline = ctx.offlineAccess === true;
    const params: Record<string, string> = {
      response_type: 'code',
      redirect_uri: ctx.callbackUrl,
      scope: scopeFor(this.config, metadata, offline),
      state,
      nonce,
      code_challenge: method === 'S256' ? await client.calculatePKCECodeChallenge(verifier) : verifier,
      code_challenge_method: method,
    };
    // As Dex: the prompt (default consent) and Google's access_type only when the client wants a refresh token.
    if (offline && this.config.promptType !== '') params['prompt'] = this.config.promptType;
    if (offline) params['access_type'] = 'offline';
    if (this.config.acrValues !== undefined) params['acr_values'] = this.config.acrValues.join(' ');
    const saved: Saved = { state, verifier, method, nonce };
    return { via: 'redirect', url: client.buildAuthorizationUrl(cfg, params).href, saved: JSON.stringify(saved) };
  }

  async complete(params: URLSearchParams, savedText: string | undefined, ctx: LoginContext): Promise<Identity> {
    const upstreamError = params.get('error');
    if (upstreamError !== null) {
      this.deps.log.warn({ error: safeCode(upstreamError), description: params.get('error_description')?.slice(0, 200) }, 'oidc: the provider answered the login with an error');
      throw new PermissionDenied(`the identity provider did not log you in (${safeCode(upstreamError)})`);
    }
    const saved = readSaved(savedText);
    if (saved === undefined) throw new PermissionDenied(NOT_CONFIRMED);
    const callback = new URL(ctx.callbackUrl);
    callback.search = params.toString();
    return this.upstream('login', ctx.signal, async (cfg) => {
      const tokens = await client.authorizationCodeGrant(cfg, callback, {
        pkceCodeVerifier: saved.verifier,
        expectedNonce: saved.nonce,
        expectedState: saved.state,
        idTokenExpected: true,
      });
      const idClaims = tokens.claims();
      if (idClaims === undefined) throw new ClaimProblem('the token response has no ID token');
      const claims = await this.withUserInfo(cfg, tokens.access_token, idClaims);
      const identity = this.identity(claims, tokens.refresh_token, idClaims.sub);
      const upstreamSession = sessionOf(idClaims);
      return upstreamSession === undefined ? identity : { ...identity, upstreamSession };
    });
  }

  /** The keys of the upstream's logout tokens: its discovered JWKS, fetched under the connector's TLS policy. */
  async logoutKeys(): Promise<JWTVerifyGetKey> {
    if (this.logoutJwks !== undefined) return this.logoutJwks;
    const metadata = await this.discovered(AbortSignal.timeout(LOGOUT_DISCOVERY_TIMEOUT_MS));
    this.logoutJwks = createRemoteJWKSet(new URL(String(metadata.jwks_uri)), { cooldownDuration: LOGOUT_JWKS_COOLDOWN_MS, [customFetch]: this.fetchImpl });
    return this.logoutJwks;
  }

  async refresh(identity: Identity, ctx: LoginContext): Promise<Identity | null> {
    const data = readRefreshData(identity.connectorData);
    if (data === undefined) return null;   // the upstream gave no refresh token at login
    try {
      return await this.upstream('refresh', ctx.signal, async (cfg) => {
        const tokens = await client.refreshTokenGrant(cfg, data.refreshToken);
        const idClaims = tokens.claims();
        if (idClaims !== undefined && idClaims.sub !== data.sub) throw new ClaimProblem('the refreshed ID token names another subject');
        const refreshToken = tokens.refresh_token ?? data.refreshToken;
        if (idClaims === undefined && !this.config.getUserInfo) {
          // Nothing new to read: the upstream's acceptance of the refresh token is its word that the user still may (Dex fails here instead).
          return { ...identity, connectorData: encodeRefreshData({ refreshToken, sub: data.sub }) };
        }
        const claims = await this.withUserInfo(cfg, tokens.access_token, idClaims ?? { sub: data.sub }, data.sub);
        const fresh = this.identity(claims, refreshToken, data.sub);
        // svc's sub was made from the login's userId: a refresh must not turn it into someone else.
        if (fresh.userId !== identity.userId) throw new ClaimProblem(`the refreshed "${this.config.userIDKey}" claim (userIDKey) names another user`);
        return fresh;
      });
    } catch (err: unknown) {
      if (err instanceof RefreshRefused) return null;
      throw err;
    }
  }

  /** The discovered configuration with fetch bound to this login's signal; UpstreamUnavailable when discovery fails. */
  private async configuration(signal: AbortSignal): Promise<client.Configuration> {
    let metadata: client.ServerMetadata;
    try {
      metadata = await this.discovered(signal);
    } catch (err: unknown) {
      this.deps.log.error({ issuer: this.config.issuer, reason: describeFailure(err) }, 'oidc: discovery at the provider failed; logins through it fail until it answers');
      throw new UpstreamUnavailable(undefined, { cause: err });
    }
    this.secretInBody ??= secretInBodyFor(this.config, metadata);
    const auth = this.secretInBody === true ? client.ClientSecretPost(this.config.clientSecret) : client.ClientSecretBasic(this.config.clientSecret);
    const cfg = new client.Configuration(metadata, this.config.clientID, undefined, auth);
    cfg[client.customFetch] = (url, options) => this.fetchImpl(url, { ...options, signal: options.signal === undefined ? signal : AbortSignal.any([options.signal, signal]) } as RequestInit);
    if (new URL(metadata.issuer).protocol === 'http:' || /^http:/.test(String(metadata.token_endpoint))) client.allowInsecureRequests(cfg);
    if (this.jwks !== undefined) client.setJwksCache(cfg, this.jwks);
    return cfg;
  }

  /** Discovery once; a failure is forgotten, so the next login tries again. */
  private discovered(signal: AbortSignal): Promise<client.ServerMetadata> {
    this.discovery ??= discover(this.config, this.fetchImpl, signal);
    this.discovery.catch(() => { this.discovery = undefined; });
    return this.discovery;
  }

  private async withUserInfo(cfg: client.Configuration, accessToken: string, idClaims: Claims & { sub: string }, expectedSub = idClaims.sub): Promise<Claims> {
    if (!this.config.getUserInfo) return idClaims;
    // fetchUserInfo refuses an answer about another subject (OIDC Core 5.3.2).
    const info = await client.fetchUserInfo(cfg, accessToken, expectedSub);
    return { ...idClaims, ...info };
  }

  private identity(claims: Claims, refreshToken: string | undefined, sub: string): Identity {
    // The claims as they came (the ID token's, with userinfo's under getUserInfo), for the claim rules.
    const identity = { ...identityFromClaims(claims, this.config, this.asksEmail), claims };
    return refreshToken === undefined ? identity : { ...identity, connectorData: encodeRefreshData({ refreshToken, sub }) };
  }

  /**
   * Runs one exchange with the upstream and turns its failures into what a person may see,
   * logging the reason: a network failure or timeout is UpstreamUnavailable; an OAuth error or a
   * token that does not verify is a refusal (for refresh: RefreshRefused); a missing claim is
   * UpstreamMisconfigured. The JWKS the exchange fetched is kept for the next one.
   */
  private async upstream<T>(action: 'login' | 'refresh', signal: AbortSignal, work: (cfg: client.Configuration) => Promise<T>): Promise<T> {
    const cfg = await this.configuration(signal);
    try {
      return await work(cfg);
    } catch (err: unknown) {
      if (this.secretInBody !== undefined || !isClientAuthRefused(err)) throw this.classify(action, err, signal);
      // As golang/oauth2's auto-detection in Dex: a provider that refuses the secret in a Basic
      // header (LemonLDAP::NG does not form-decode it, RFC 6749 §2.3.1) gets it in the body from now on.
      this.secretInBody = true;
      this.deps.log.info('oidc: the provider refused the client secret in a Basic header; sending it in the request body from now on (basicAuthUnsupported: true says so)');
      return this.upstream(action, signal, work);
    } finally {
      this.jwks = client.getJwksCache(cfg) ?? this.jwks;
    }
  }

  private classify(action: 'login' | 'refresh', err: unknown, signal: AbortSignal): unknown {
    const log = this.deps.log;
    if (err instanceof PermissionDenied) {
      log.info({ reason: err.message }, `oidc: ${action} refused`);
      return err;
    }
    if (err instanceof ClaimProblem) {
      log.error({ reason: err.message }, `oidc: ${action} failed: the provider's claims do not fit the connector's config`);
      return new UpstreamMisconfigured(undefined, { cause: err });
    }
    if (isClientAuthRefused(err)) {
      log.error({ status: (err as { status?: unknown }).status }, `oidc: ${action} failed: the provider refused svc's client credentials (clientID, clientSecret, basicAuthUnsupported)`);
      return new UpstreamMisconfigured(undefined, { cause: err });
    }
    if (err instanceof client.ResponseBodyError) {
      log.warn({ error: safeCode(err.error), status: err.status }, `oidc: the provider refused the ${action === 'login' ? 'code' : 'refresh token'}`);
      return action === 'refresh' ? new RefreshRefused() : new PermissionDenied(NOT_CONFIRMED, { cause: err });
    }
    if (signal.aborted || !(err instanceof client.ClientError) || isTransport(err)) {
      log.warn({ reason: signal.aborted ? 'timed out' : describeFailure(err) }, `oidc: ${action} failed: the provider cannot be reached`);
      return new UpstreamUnavailable(undefined, { cause: err });
    }
    const claim = claimOf(err);
    log.warn({ code: err.code, reason: err.message, ...(typeof claim === 'string' ? { claim } : {}) }, `oidc: ${action} refused: the provider's answer does not verify`);
    return action === 'refresh' ? new RefreshRefused() : new PermissionDenied(NOT_CONFIRMED, { cause: err });
  }
}

/** The upstream's session of a login (its ID token's iss, sub and sid), when its claims fit a key. */
function sessionOf(claims: { readonly iss: string; readonly sub: string; readonly [claim: string]: unknown }): Identity['upstreamSession'] {
  const { iss, sub, sid } = claims;
  if (sub === '' || sub.length > MAX_SESSION_CLAIM_LENGTH) return undefined;
  const usableSid = typeof sid === 'string' && sid !== '' && sid.length <= MAX_SESSION_CLAIM_LENGTH ? sid : undefined;
  return { issuer: iss, sub, ...(usableSid !== undefined ? { sid: usableSid } : {}) };
}

/** The token endpoint refused svc's client authentication (401 with a challenge, or invalid_client). */
function isClientAuthRefused(err: unknown): boolean {
  return err instanceof client.WWWAuthenticateChallengeError || (err instanceof client.ResponseBodyError && err.error === 'invalid_client');
}

/** The upstream refused a refresh: no new tokens (null), not a failure. */
class RefreshRefused extends Error {
  override readonly name = 'RefreshRefused';
}

/** openid-client wraps a failed fetch (refused connection, TLS, timeout) in a ClientError with the fetch error as cause. */
function isTransport(err: Error): boolean {
  const cause = err.cause;
  return cause instanceof Error && (cause.name === 'TypeError' || cause.name === 'AbortError' || cause.name === 'TimeoutError');
}

/** The claim a failed comparison names (oauth4webapi puts it in the cause), never its value. */
function claimOf(err: Error): string | undefined {
  let cause: unknown = err;
  for (let i = 0; i < 3 && cause instanceof Error; i++) {
    const inner: unknown = cause.cause;
    if (typeof inner === 'object' && inner !== null && typeof (inner as { claim?: unknown }).claim === 'string') return (inner as { claim: string }).claim;
    cause = inner;
  }
  return undefined;
}

/** An OAuth error code is short ASCII (RFC 6749 §5.2); anything else is not echoed. */
function safeCode(value: string): string {
  return /^[\x20-\x21\x23-\x5b\x5d-\x7e]{1,64}$/.test(value) ? value : 'error';
}

function readSaved(text: string | undefined): Saved | undefined {
  if (text === undefined) return undefined;
  try {
    const value = JSON.parse(text) as Partial<Saved>;
    const { state, verifier, method, nonce } = value;
    if (typeof state === 'string' && typeof verifier === 'string' && typeof nonce === 'string' && (method === 'S256' || method === 'plain')) return { state, verifier, method, nonce };
  } catch {
    // fall through: not ours
  }
  return undefined;
}

function encodeRefreshData(data: RefreshData): string {
  return JSON.stringify(data);
}

function readRefreshData(text: string | undefined): RefreshData | undefined {
  if (text === undefined) return undefined;
  try {
    const value = JSON.parse(text) as Partial<RefreshData>;
    if (typeof value.refreshToken === 'string' && value.refreshToken !== '' && typeof value.sub === 'string') return { refreshToken: value.refreshToken, sub: value.sub };
  } catch {
    // fall through: not ours
  }
  return undefined;
}
