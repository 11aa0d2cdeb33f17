/**
 * The Google connector (Dex's connector/google): an OpenID Connect login at Google (the code flow
 * with PKCE and a nonce, the ID token checked by openid-client), the `hd` claim held to
 * `hostedDomains`, and the user's groups read from the Admin SDK Directory API through the
 * service account (./directory.ts), since Google puts no groups in its ID tokens. Refresh redeems
 * Google's refresh token and checks `hd` and the groups again.
 *
 * Loaded on the first login (./lazy.ts): parsing never loads openid-client.
 */
import * as client from 'openid-client';
import { PermissionDenied } from '../../src/errors.js';
import { describeFailure } from '../../src/lib/tls-fetch.js';
import type { BrowserConnector, BrowserStart, ConnectorDeps, Identity, LoginContext } from '../connector.js';
import { LoginRefused, upstreamReason, UpstreamMisconfigured, UpstreamUnavailable } from '../errors.js';
import type { GoogleConfig } from './config.js';
import { groupsOf, type Directory } from './directory.js';

export const NOT_IN_DOMAIN = 'your Google account is not in a domain allowed to log in here';
export const NOT_IN_GROUPS = 'your Google account is not a member of the groups allowed to log in here';
export const CANCELLED = 'the login was cancelled or refused at Google';
export const EMAIL_NOT_VERIFIED = 'your Google account\'s email address is not verified at Google, so it is not taken as yours; verify it there and log in again';
const NOT_CONFIRMED = 'Google did not confirm this login; start again from the application';

type Claims = Readonly<Record<string, unknown>>;

/** Kept server-side between begin() and complete(), single use. */
interface Saved {
  readonly state: string;
  readonly verifier: string;
  readonly nonce: string;
}

interface RefreshData {
  readonly refreshToken: string;
  readonly sub: string;
}

/** A claim Google should have sent and did not: the scopes or the client are set up wrong. */
class ClaimMissing extends Error {
  override readonly name = 'ClaimMissing';
}

/** Google refused a refresh token: no new tokens (null), not a failure. */
class RefreshRefused extends Error {
  override readonly name = 'RefreshRefused';
}

export class GoogleConnector implements BrowserConnector {
  readonly kind = 'browser';
  private discovery: Promise<client.ServerMetadata> | undefined;

  constructor(
    private readonly config: GoogleConfig,
    private readonly deps: ConnectorDeps,
    private readonly fetchImpl: typeof globalThis.fetch,
    /** Undefined without a service account: no groups. */
    private readonly directory: Directory | undefined,
  ) {}

  async begin(state: string, ctx: LoginContext): Promise<BrowserStart> {
    const cfg = await this.configuration(ctx.signal);
    const verifier = client.randomPKCECodeVerifier();
    const nonce = client.randomNonce();
    const params: Record<string, string> = {
      response_type: 'code',
      redirect_uri: ctx.callbackUrl,
      scope: [...new Set(['openid', ...this.config.scopes])].join(' '),
      state,
      nonce,
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    };
    // As Dex: Google's account chooser shows the one domain, or only Workspace accounts ('*'); the ID token's hd decides.
    const domains = this.config.hostedDomains;
    if (domains !== undefined) params['hd'] = domains.length === 1 ? (domains[0] ?? '*') : '*';
    if (ctx.offlineAccess === true) {
      params['access_type'] = 'offline';
      if (this.config.promptType !== '') params['prompt'] = this.config.promptType;
    }
    const saved: Saved = { state, verifier, nonce };
    return { via: 'redirect', url: client.buildAuthorizationUrl(cfg, params).href, saved: JSON.stringify(saved) };
  }

  async complete(params: URLSearchParams, savedText: string | undefined, ctx: LoginContext): Promise<Identity> {
    const error = params.get('error');
    if (error !== null) {
      this.deps.log.info({ error: safeCode(error), description: params.get('error_description')?.slice(0, 200) }, `google: the authorization answered ${safeCode(error)}`);
      throw new LoginRefused(error === 'access_denied' ? CANCELLED : NOT_CONFIRMED);
    }
    const saved = readSaved(savedText);
    if (saved === undefined) throw new PermissionDenied(NOT_CONFIRMED);
    const callback = new URL(ctx.callbackUrl);
    callback.search = params.toString();
    const { claims, refreshToken } = await this.exchange('login', ctx.signal, async (cfg) => {
      const tokens = await client.authorizationCodeGrant(cfg, callback, { pkceCodeVerifier: saved.verifier, expectedNonce: saved.nonce, expectedState: saved.state, idTokenExpected: true });
      const idClaims = tokens.claims();
      if (idClaims === undefined) throw new ClaimMissing('the token response has no ID token');
      return { claims: idClaims as Claims, refreshToken: tokens.refresh_token };
    });
    return this.identity(claims, refreshToken, ctx);
  }

  async refresh(identity: Identity, ctx: LoginContext): Promise<Identity | null> {
    const data = readRefreshData(identity.connectorData);
    if (data === undefined) return null;
    let fresh: { claims: Claims; refreshToken: string | undefined };
    try {
      fresh = await this.exchange('refresh', ctx.signal, async (cfg) => {
        const tokens = await client.refreshTokenGrant(cfg, data.refreshToken);
        const idClaims = tokens.claims();
        // Google answers a refresh with a new ID token; without one there is no hd to check.
        if (idClaims === undefined) throw new ClaimMissing('the refresh answer has no ID token');
        if (idClaims.sub !== data.sub) throw new ClaimMissing('the refreshed ID token names another subject');
        return { claims: idClaims as Claims, refreshToken: tokens.refresh_token ?? data.refreshToken };
      });
    } catch (err: unknown) {
      if (err instanceof RefreshRefused) return null;
      throw err;
    }
    return this.identity(fresh.claims, fresh.refreshToken, ctx);
  }

  /** The identity the ID token's claims describe, after `hd` and with the groups; refusals in words. */
  private async identity(claims: Claims, refreshToken: string | undefined, ctx: LoginContext): Promise<Identity> {
    const sub = text(claims['sub']);
    const email = text(claims['email']);
    if (sub === undefined) throw this.misconfigured('the ID token has no sub');
    this.checkEmailVerified(claims, email);
    this.checkHostedDomain(claims, email);
    const { fetched, kept } = await this.groups(email, ctx);
    const username = text(claims['name']) ?? email ?? sub;
    return {
      userId: sub,
      username,
      ...(email !== undefined ? { email } : {}),
      emailVerified: true,
      groups: kept,
      // For the claim rules: the ID token's claims, and the groups as the Directory API gave them
      // (before `groups` filters them); no `groups` at all without a service account, so a rule
      // that reads them fails (and refuses) rather than see an empty list.
      claims: fetched === undefined ? claims : { ...claims, groups: fetched },
      ...(refreshToken !== undefined ? { connectorData: JSON.stringify({ refreshToken, sub } satisfies RefreshData) } : {}),
    };
  }

  /**
   * As Dex: the email must be verified. The groups are read for it, and the claim rules and the
   * identity take it as the person's; an unverified one may be anybody's address (issue 54,
   * review finding 5). No email at all is the scopes' fault (email is asked for by default).
   */
  private checkEmailVerified(claims: Claims, email: string | undefined): void {
    if (email === undefined) throw this.misconfigured('the ID token has no email (add the email scope): svc takes only a verified email, as Dex does');
    if (claims['email_verified'] !== true) {
      this.deps.log.info({ email, emailVerified: claims['email_verified'] ?? null }, 'google: login refused: the ID token\'s email_verified is not true');
      throw new LoginRefused(EMAIL_NOT_VERIFIED);
    }
  }

  private checkHostedDomain(claims: Claims, email: string | undefined): void {
    const allowed = this.config.hostedDomains;
    if (allowed === undefined) return;
    const hd = text(claims['hd']);
    // No hd: a consumer account (gmail.com), or a Workspace account outside any domain listed.
    if (hd === undefined || !allowed.includes(hd.toLowerCase())) {
      this.deps.log.info({ hd: hd ?? null, email }, 'google: login refused: the ID token\'s hd is not one of hostedDomains');
      throw new LoginRefused(NOT_IN_DOMAIN);
    }
  }

  /**
   * The groups as the Directory API gave them, and those that count (filtered to `groups`);
   * none without a service account. With one they are read at every login, asked for or not:
   * `groups` must hold whatever the client asks, and the claim rules may read them.
   */
  private async groups(email: string | undefined, ctx: LoginContext): Promise<{ fetched?: string[]; kept: string[] }> {
    if (this.directory === undefined) return { kept: [] };
    if (email === undefined) throw this.misconfigured('the ID token has no email, which the Directory API needs (add the email scope)');
    let fetched: string[];
    try {
      fetched = await groupsOf(this.directory, email, this.config.fetchTransitiveGroupMembership, ctx.signal);
    } catch (err: unknown) {
      this.deps.log.error({ email, reason: upstreamReason(err) ?? describeFailure(err) }, 'google: login refused: the groups could not be read from the Directory API');
      throw err;
    }
    const filter = this.config.groups;
    if (filter === undefined) return { fetched, kept: fetched };
    const wanted = new Set(filter.map((g) => g.toLowerCase()));
    const kept = fetched.filter((g) => wanted.has(g.toLowerCase()));
    if (kept.length === 0) {
      this.deps.log.info({ email }, 'google: login refused: not in the configured groups');
      throw new LoginRefused(NOT_IN_GROUPS);
    }
    return { fetched, kept };
  }

  private misconfigured(reason: string): UpstreamMisconfigured {
    this.deps.log.error({ reason }, 'google: login failed: Google\'s answer does not fit the connector\'s config');
    return new UpstreamMisconfigured(undefined, { reason });
  }

  /** The discovered configuration with fetch bound to this login's signal; UpstreamUnavailable when discovery fails. */
  private async configuration(signal: AbortSignal): Promise<client.Configuration> {
    let metadata: client.ServerMetadata;
    try {
      this.discovery ??= this.discover(signal);
      metadata = await this.discovery;
    } catch (err: unknown) {
      this.discovery = undefined;
      this.deps.log.error({ issuer: this.config.issuer, reason: signal.aborted ? 'timed out' : describeFailure(err) }, 'google: discovery failed; logins through Google fail until it answers');
      throw new UpstreamUnavailable(undefined, { cause: err });
    }
    const cfg = new client.Configuration(metadata, this.config.clientID, undefined, client.ClientSecretBasic(this.config.clientSecret));
    cfg[client.customFetch] = (url, options) => this.fetchImpl(url, { ...options, signal: options.signal === undefined ? signal : AbortSignal.any([options.signal, signal]) } as RequestInit);
    if (new URL(metadata.issuer).protocol === 'http:') client.allowInsecureRequests(cfg);
    return cfg;
  }

  private async discover(signal: AbortSignal): Promise<client.ServerMetadata> {
    const insecure = new URL(this.config.issuer).protocol === 'http:';
    const cfg = await client.discovery(new URL(this.config.issuer), this.config.clientID, undefined, undefined, {
      [client.customFetch]: (url, options) => this.fetchImpl(url, { ...options, signal } as RequestInit),
      ...(insecure ? { execute: [client.allowInsecureRequests] } : {}),
    });
    return cfg.serverMetadata();
  }

  /**
   * One exchange with Google's token endpoint, its failures turned into what a person may see
   * (the reason logged): unreachable, refused code or refresh token, svc's client refused, a claim missing.
   */
  private async exchange<T>(action: 'login' | 'refresh', signal: AbortSignal, work: (cfg: client.Configuration) => Promise<T>): Promise<T> {
    const cfg = await this.configuration(signal);
    try {
      return await work(cfg);
    } catch (err: unknown) {
      throw this.classify(action, err, signal);
    }
  }

  private classify(action: 'login' | 'refresh', err: unknown, signal: AbortSignal): unknown {
    const log = this.deps.log;
    if (err instanceof ClaimMissing) return this.misconfigured(err.message);
    if (err instanceof client.ResponseBodyError && err.error === 'invalid_client') {
      log.error({ status: err.status }, `google: ${action} failed: Google refused svc's client credentials (clientID, clientSecret)`);
      return new UpstreamMisconfigured(undefined, { cause: err });
    }
    if (err instanceof client.ResponseBodyError) {
      log.warn({ error: safeCode(err.error), status: err.status }, `google: Google refused the ${action === 'login' ? 'code' : 'refresh token'}`);
      return action === 'refresh' ? new RefreshRefused() : new PermissionDenied(NOT_CONFIRMED, { cause: err });
    }
    if (signal.aborted || !(err instanceof client.ClientError) || err.cause instanceof Error && ['TypeError', 'AbortError', 'TimeoutError'].includes(err.cause.name)) {
      log.warn({ reason: signal.aborted ? 'timed out' : describeFailure(err) }, `google: ${action} failed: Google cannot be reached`);
      return new UpstreamUnavailable(undefined, { cause: err });
    }
    log.warn({ code: err.code, reason: err.message }, `google: ${action} refused: Google's answer does not verify`);
    return action === 'refresh' ? new RefreshRefused() : new PermissionDenied(NOT_CONFIRMED, { cause: err });
  }
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** An OAuth error code is short ASCII (RFC 6749 §5.2); anything else is not echoed. */
function safeCode(value: string): string {
  return /^[\x20-\x21\x23-\x5b\x5d-\x7e]{1,64}$/.test(value) ? value : 'error';
}

function readSaved(savedText: string | undefined): Saved | undefined {
  if (savedText === undefined) return undefined;
  try {
    const { state, verifier, nonce } = JSON.parse(savedText) as Partial<Saved>;
    if (typeof state === 'string' && typeof verifier === 'string' && typeof nonce === 'string') return { state, verifier, nonce };
  } catch {
    // not ours
  }
  return undefined;
}

function readRefreshData(data: string | undefined): RefreshData | undefined {
  if (data === undefined) return undefined;
  try {
    const { refreshToken, sub } = JSON.parse(data) as Partial<RefreshData>;
    if (typeof refreshToken === 'string' && refreshToken !== '' && typeof sub === 'string') return { refreshToken, sub };
  } catch {
    // not ours
  }
  return undefined;
}
