/**
 * The Microsoft Entra ID connector (`type: microsoft`, issue 54): the browser goes to the v2.0
 * authorize endpoint of `<authority>/<tenant>` with PKCE (S256), a nonce and svc's state, comes
 * back with a code, exchanged at the token endpoint (client secret in the body) for an ID token
 * and an access token for Microsoft Graph. The ID token is verified with jose against the
 * tenant's keys (signature, `aud`, expiry, `nonce`) and its tenant by ./tenant.ts; the groups are
 * the token's `groups` claim or, on the overage, Graph's (./graph.ts). A login whose groups
 * cannot be read is refused, never made without them.
 *
 * No refresh: the groups are read at login only, and a client that wants longer logs in again.
 * Discovery and the key set are fetched at the first login and kept; a failed discovery is
 * forgotten so the next login tries again.
 */
import { createRemoteJWKSet, customFetch, errors as joseErrors, jwtVerify, type JWTVerifyGetKey } from 'jose';
import { createHash, randomBytes } from 'node:crypto';
import type { BrowserConnector, BrowserStart, ConnectorDeps, Identity, LoginContext } from '../connector.js';
import { LoginRefused, UpstreamMisconfigured, UpstreamUnavailable } from '../errors.js';
import { readJson, send, tokenGrant, type Upstream } from '../oauth2/http.js';
import type { MicrosoftConfig } from './config.js';
import { GRAPH_TIME_BUDGET_MS, GraphFailed, groupsByIds, memberObjectIds, type GraphContext } from './graph.js';
import { decideGroups, groupSource, GroupsClaimProblem, needsGroupObjects, valuesOf } from './groups.js';
import { acceptedTenant, discoveryUrl, readDiscovery, TenantRefused, type Discovered } from './tenant.js';

export const NOT_IN_GROUPS = 'your Microsoft account is not a member of the groups allowed to log in here';
export const CANCELLED = 'the login was cancelled or refused at Microsoft';
export const NOT_CONFIRMED = 'Microsoft did not confirm this login; start again from the application';
export const GROUPS_UNREADABLE = 'your groups could not be read from Microsoft Graph, and svc logs no one in without them; try again later (the server log says why)';

/** Kept server-side between begin() and complete(), single use. */
interface Saved {
  readonly state: string;
  readonly verifier: string;
  readonly nonce: string;
}

const JWKS_COOLDOWN_MS = 5_000;
/** Clock skew allowed on the ID token's iat, nbf and exp. */
const CLOCK_TOLERANCE_S = 60;

export class MicrosoftConnector implements BrowserConnector {
  readonly kind = 'browser';
  readonly #up: Upstream;
  #discovery: Promise<Discovered> | undefined;
  #keys: JWTVerifyGetKey | undefined;

  constructor(private readonly config: MicrosoftConfig, private readonly deps: ConnectorDeps) {
    this.#up = { fetch: deps.upstreamFetch(config.rootCA !== undefined ? [config.rootCA] : []), log: deps.log, name: 'microsoft' };
  }

  /** OIDC's scopes and Graph's delegated permissions, named on graphURL so a national cloud gets its own Graph's token. */
  scope(): string {
    return ['openid', 'profile', 'email', `${this.config.graphURL}/User.Read`, `${this.config.graphURL}/GroupMember.Read.All`].join(' ');
  }

  async begin(state: string, ctx: LoginContext): Promise<BrowserStart> {
    const discovered = await this.discovered(ctx.signal);
    const saved: Saved = { state, verifier: randomBytes(32).toString('base64url'), nonce: randomBytes(16).toString('base64url') };
    const url = new URL(discovered.authorizationEndpoint);
    url.search = new URLSearchParams({
      client_id: this.config.clientID, response_type: 'code', redirect_uri: ctx.callbackUrl, response_mode: 'query', scope: this.scope(), state,
      nonce: saved.nonce, code_challenge: createHash('sha256').update(saved.verifier).digest('base64url'), code_challenge_method: 'S256',
    }).toString();
    return { via: 'redirect', url: url.href, saved: JSON.stringify(saved) };
  }

  async complete(params: URLSearchParams, savedText: string | undefined, ctx: LoginContext): Promise<Identity> {
    const log = this.#up.log;
    const error = params.get('error');
    if (error !== null) {
      log.info({ error: safeCode(error), description: params.get('error_description')?.slice(0, 200) }, `microsoft: the authorization answered ${safeCode(error)}`);
      if (error === 'access_denied') throw new LoginRefused(CANCELLED);
      throw new UpstreamMisconfigured();
    }
    const saved = readSaved(savedText);
    const code = params.get('code');
    if (saved === undefined || code === null || code === '' || params.get('state') !== saved.state) {
      log.warn('microsoft: the callback carries no code, or not the state of this login');
      throw new LoginRefused(NOT_CONFIRMED);
    }
    const discovered = await this.discovered(ctx.signal);
    const answer = await tokenGrant(this.#up, discovered.tokenEndpoint, new URLSearchParams({
      grant_type: 'authorization_code', code, redirect_uri: ctx.callbackUrl, code_verifier: saved.verifier, scope: this.scope(),
      client_id: this.config.clientID, client_secret: this.config.clientSecret,
    }), ctx.signal);
    if (!answer.ok) {
      const hint = answer.error === 'invalid_client' ? ': check clientID and clientSecret' : '';
      log.warn({ error: safeCode(answer.error), description: answer.description }, `microsoft: the code exchange was refused: ${safeCode(answer.error)}${hint}`);
      throw answer.error === 'invalid_grant' ? new LoginRefused(NOT_CONFIRMED) : new UpstreamMisconfigured();
    }
    if (answer.idToken === undefined) {
      log.warn('microsoft: the token response has no ID token (is openid among the scopes?)');
      throw new UpstreamMisconfigured();
    }
    const claims = await this.verified(answer.idToken, discovered, saved.nonce);
    const groups = await this.groups(claims, answer.tokens.accessToken, ctx.signal);
    return identityOf(claims, groups);
  }

  /** The ID token's claims, verified: signature by the tenant's keys, aud, times, nonce, then the tenant. */
  private async verified(idToken: string, discovered: Discovered, nonce: string): Promise<Record<string, unknown>> {
    this.#keys ??= createRemoteJWKSet(new URL(discovered.jwksUri), { cooldownDuration: JWKS_COOLDOWN_MS, [customFetch]: this.#up.fetch });
    let payload: Record<string, unknown>;
    try {
      ({ payload } = await jwtVerify(idToken, this.#keys, {
        audience: this.config.clientID, algorithms: ['RS256'], currentDate: this.deps.now(), clockTolerance: CLOCK_TOLERANCE_S, requiredClaims: ['iss', 'sub', 'exp', 'iat'],
      }));
    } catch (err: unknown) {
      if (err instanceof joseErrors.JOSEError && !(err instanceof joseErrors.JWKSTimeout)) {
        this.#up.log.warn({ code: err.code, reason: err.message }, 'microsoft: the ID token does not verify');
        throw new LoginRefused(NOT_CONFIRMED, { cause: err });
      }
      this.#up.log.warn({ reason: err instanceof Error ? err.message : String(err) }, 'microsoft: the tenant\'s signing keys could not be fetched');
      throw new UpstreamUnavailable(undefined, { cause: err });
    }
    if (payload['nonce'] !== nonce) {
      this.#up.log.warn('microsoft: the ID token\'s nonce is not this login\'s');
      throw new LoginRefused(NOT_CONFIRMED);
    }
    try {
      acceptedTenant(payload, discovered, this.config);
    } catch (err: unknown) {
      if (!(err instanceof TenantRefused)) throw err;
      this.#up.log.warn({ reason: err.message }, 'microsoft: the ID token is not from the configured tenant');
      throw new LoginRefused(NOT_CONFIRMED, { cause: err });
    }
    return payload;
  }

  /** The groups that count, from the token or Graph; LoginRefused outside `groups`, GROUPS_UNREADABLE when Graph fails. */
  private async groups(claims: Record<string, unknown>, accessToken: string, signal: AbortSignal): Promise<string[]> {
    let source;
    try {
      source = groupSource(claims);
    } catch (err: unknown) {
      if (!(err instanceof GroupsClaimProblem)) throw err;
      this.#up.log.error({ reason: err.message }, 'microsoft: the ID token\'s groups do not fit');
      throw new UpstreamMisconfigured(undefined, { cause: err });
    }
    let values: string[] = source.kind === 'token' ? [...source.ids] : [];
    if (needsGroupObjects(this.config, source)) {
      const g: GraphContext = { up: this.#up, graphURL: this.config.graphURL, accessToken, signal, now: this.deps.now };
      const deadline = this.deps.now().getTime() + GRAPH_TIME_BUDGET_MS;
      try {
        const ids = source.kind === 'overage' ? await memberObjectIds(g, this.config.onlySecurityGroups, deadline) : values;
        values = valuesOf(this.config, await groupsByIds(g, ids, deadline));
      } catch (err: unknown) {
        const reason = err instanceof GraphFailed ? err.message : signal.aborted ? 'the login timed out' : err instanceof Error ? err.message : String(err);
        this.#up.log.error({ reason, overage: source.kind === 'overage' }, 'microsoft: login refused: the groups could not be read from Microsoft Graph');
        throw new UpstreamUnavailable(GROUPS_UNREADABLE, { cause: err, reason });
      }
    }
    const decision = decideGroups(this.config, values);
    if (!decision.allowed) {
      this.#up.log.info({ oid: claims['oid'] }, 'microsoft: login refused: not in the configured groups');
      throw new LoginRefused(NOT_IN_GROUPS);
    }
    return decision.groups;
  }

  /** The discovery document, once; a failure is forgotten, so the next login tries again. */
  private discovered(signal: AbortSignal): Promise<Discovered> {
    this.#discovery ??= this.discover(signal);
    this.#discovery.catch(() => { this.#discovery = undefined; });
    return this.#discovery;
  }

  private async discover(signal: AbortSignal): Promise<Discovered> {
    const what = 'GET the v2.0 discovery document';
    const res = await send(this.#up, what, discoveryUrl(this.config), { headers: { accept: 'application/json' } }, signal);
    if (res.status !== 200) {
      await res.body?.cancel();
      this.#up.log.error({ status: res.status, tenant: this.config.tenant }, `microsoft: ${what} answered HTTP ${res.status} (is tenant right?)`);
      throw res.status >= 500 || res.status === 429 ? new UpstreamUnavailable() : new UpstreamMisconfigured();
    }
    try {
      return readDiscovery(await readJson(this.#up, what, res, signal), this.config);
    } catch (err: unknown) {
      if (!(err instanceof Error) || err.name !== 'DiscoveryFailed') throw err;
      this.#up.log.error({ reason: err.message }, 'microsoft: the discovery document cannot be used');
      throw new UpstreamMisconfigured(undefined, { cause: err });
    }
  }
}

/**
 * svc's identity: `oid` (the user's object id, the same for every app of the tenant, as Dex's
 * `id`) as the user id; `name`, else `preferred_username`, as the username. Entra's `email`
 * claim is not verified by Entra (an administrator or the user may set it), so it is passed on
 * with email_verified false. `claims` (what the claim rules read) are the ID token's, with
 * `groups` replaced by the groups that count (names or ids, filtered), never the overage pointer.
 */
function identityOf(claims: Record<string, unknown>, groups: readonly string[]): Identity {
  const str = (key: string): string | undefined => (typeof claims[key] === 'string' && claims[key] !== '' ? claims[key] : undefined);
  const oid = str('oid');
  const preferred = str('preferred_username');
  const username = str('name') ?? preferred;
  if (oid === undefined || username === undefined) throw new UpstreamMisconfigured(undefined, { reason: 'the ID token has no oid, or neither name nor preferred_username (add the profile scope)' });
  const email = str('email');
  return {
    userId: oid,
    username,
    ...(preferred !== undefined ? { preferredUsername: preferred } : {}),
    ...(email !== undefined ? { email } : {}),
    emailVerified: false,
    groups,
    // For the claim rules (docs/claims.md): the ID token's claims, with `groups` as resolved here.
    claims: { ...withoutOverage(claims), groups: [...groups] },
  };
}

/** The claims without the overage indication, which pointed at Graph and says nothing of the user. */
function withoutOverage(claims: Record<string, unknown>): Record<string, unknown> {
  const { _claim_names: _names, _claim_sources: _sources, hasgroups: _has, ...rest } = claims;
  return rest;
}

/** An OAuth error code is short ASCII (RFC 6749 §5.2); anything else is not echoed. */
function safeCode(value: string): string {
  return /^[\x20-\x21\x23-\x5b\x5d-\x7e]{1,64}$/.test(value) ? value : 'error';
}

function readSaved(text: string | undefined): Saved | undefined {
  if (text === undefined) return undefined;
  try {
    const { state, verifier, nonce } = JSON.parse(text) as Partial<Saved>;
    if (typeof state === 'string' && typeof verifier === 'string' && typeof nonce === 'string') return { state, verifier, nonce };
  } catch {
    // not ours
  }
  return undefined;
}
