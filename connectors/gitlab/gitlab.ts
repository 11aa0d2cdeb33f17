/**
 * The GitLab connector (OAuth2, Dex's connector/gitlab): the browser goes to `/oauth/authorize`
 * with the login's `state` and scopes `read_user` (plus `openid` when groups are read), comes back
 * with a code, exchanged at `/oauth/token`; the user is read from `/api/v4/user` and the groups
 * from the `groups` claim of `/oauth/userinfo`. A self-hosted GitLab is the same under `baseURL`.
 *
 * GitLab access tokens expire (2 h): refresh uses the refresh token GitLab gave (and keeps the
 * new one it answers, since GitLab rotates them); an `invalid_grant` or a revoked token ends it.
 */
import type { BrowserConnector, BrowserStart, ConnectorDeps, Identity, LoginContext } from '../connector.js';
import { LoginRefused, UpstreamMisconfigured } from '../errors.js';
import { getJson, tokenGrant, TokenRejected, type Tokens, type Upstream } from '../oauth2/http.js';
import type { GitlabConfig } from './config.js';
import { decideGroups, needsGroups } from './groups.js';

export const NOT_IN_GROUPS = 'your GitLab account is not a member of the groups allowed to log in here';
export const CANCELLED = 'the login was cancelled or refused at GitLab';

interface GitlabUser {
  readonly id: string;
  readonly username: string;
  readonly name?: string;
  readonly email?: string;
}

export class GitlabConnector implements BrowserConnector {
  readonly kind = 'browser';
  readonly #up: Upstream;
  readonly #base: string;

  constructor(private readonly config: GitlabConfig, deps: ConnectorDeps) {
    this.#base = config.baseURL.replace(/\/+$/, '');
    const ca = config.rootCA ?? config.rootCAData;
    this.#up = { fetch: deps.upstreamFetch(ca !== undefined ? [ca] : []), log: deps.log, name: 'gitlab', headers: { 'user-agent': 'svc' } };
  }

  /** `read_user`, and `openid` when the groups claim of userinfo is needed (Dex's scopes). */
  scopes(wantGroups: boolean): string {
    return needsGroups(this.config, wantGroups) ? 'read_user openid' : 'read_user';
  }

  begin(state: string, ctx: LoginContext): Promise<BrowserStart> {
    const url = new URL(`${this.#base}/oauth/authorize`);
    url.search = new URLSearchParams({
      client_id: this.config.clientID, redirect_uri: ctx.callbackUrl, response_type: 'code', scope: this.scopes(ctx.wantGroups), state,
    }).toString();
    return Promise.resolve({ via: 'redirect', url: url.href });
  }

  async complete(params: URLSearchParams, _saved: string | undefined, ctx: LoginContext): Promise<Identity> {
    const error = params.get('error');
    if (error !== null) {
      this.#up.log.info({ error, description: params.get('error_description')?.slice(0, 200) }, `gitlab: the authorization answered ${error}`);
      if (error === 'access_denied') throw new LoginRefused(CANCELLED);
      throw new UpstreamMisconfigured();
    }
    const code = params.get('code');
    if (code === null || code === '') {
      this.#up.log.warn('gitlab: the callback carries no code');
      throw new UpstreamMisconfigured();
    }
    const tokens = await this.grant(new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: ctx.callbackUrl }), ctx.signal);
    if (tokens === undefined) throw new UpstreamMisconfigured();
    try {
      return await this.identity(tokens, ctx);
    } catch (err: unknown) {
      if (!(err instanceof TokenRejected)) throw err;
      this.#up.log.warn(`gitlab: ${err.message} right after the code exchange`);
      throw new UpstreamMisconfigured();
    }
  }

  /** The identity again, through the refresh token when there is one; null when GitLab no longer vouches. */
  async refresh(identity: Identity, ctx: LoginContext): Promise<Identity | null> {
    const kept = readTokens(identity.connectorData);
    if (kept === undefined) return null;
    let tokens: Tokens | undefined = kept;
    if (kept.refreshToken !== undefined) {
      tokens = await this.grant(new URLSearchParams({ grant_type: 'refresh_token', refresh_token: kept.refreshToken }), ctx.signal);
      if (tokens === undefined) return null;
    }
    try {
      return await this.identity(tokens, ctx);
    } catch (err: unknown) {
      if (!(err instanceof TokenRejected)) throw err;
      this.#up.log.info('gitlab: refresh refused: the access token was revoked or expired');
      return null;
    }
  }

  /** The tokens of a grant, or undefined after logging why GitLab refused it. */
  private async grant(grant: URLSearchParams, signal: AbortSignal): Promise<Tokens | undefined> {
    grant.set('client_id', this.config.clientID);
    grant.set('client_secret', this.config.clientSecret);
    const answer = await tokenGrant(this.#up, `${this.#base}/oauth/token`, grant, signal);
    if (answer.ok) return answer.tokens;
    const hint = answer.error === 'invalid_client' ? ': check clientID and clientSecret' : '';
    this.#up.log.warn({ error: answer.error, description: answer.description }, `gitlab: the ${grant.get('grant_type') ?? ''} grant was refused: ${answer.error}${hint}`);
    return undefined;
  }

  private async identity(tokens: Tokens, ctx: LoginContext): Promise<Identity> {
    const user = await this.user(tokens.accessToken, ctx.signal);
    let groups: readonly string[] = [];
    if (needsGroups(this.config, ctx.wantGroups)) {
      const { body } = await getJson(this.#up, 'GET /oauth/userinfo', `${this.#base}/oauth/userinfo`, tokens.accessToken, ctx.signal);
      const decision = decideGroups(this.config, typeof body === 'object' && body !== null ? body as Record<string, unknown> : {});
      if (!decision.allowed) {
        this.#up.log.info({ username: user.username }, 'gitlab: login refused: not in the configured groups');
        throw new LoginRefused(NOT_IN_GROUPS);
      }
      groups = decision.groups;
    }
    return {
      userId: this.config.useLoginAsID ? user.username : user.id,
      username: user.name ?? user.email ?? user.username,
      preferredUsername: user.username,
      ...(user.email !== undefined ? { email: user.email } : {}),
      emailVerified: true,
      groups,
      connectorData: JSON.stringify(tokens),
      // The profile's fields as read, for the claim rules.
      claims: { ...user, groups: [...groups] },
    };
  }

  private async user(token: string, signal: AbortSignal): Promise<GitlabUser> {
    const { body } = await getJson(this.#up, 'GET /api/v4/user', `${this.#base}/api/v4/user`, token, signal);
    const u = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
    const id = typeof u['id'] === 'number' || typeof u['id'] === 'string' ? String(u['id']) : undefined;
    const username = typeof u['username'] === 'string' && u['username'] !== '' ? u['username'] : undefined;
    if (id === undefined || username === undefined) {
      this.#up.log.warn('gitlab: GET /api/v4/user answered without id or username');
      throw new UpstreamMisconfigured();
    }
    const optional = (key: string): string | undefined => (typeof u[key] === 'string' && u[key] !== '' ? u[key] : undefined);
    const name = optional('name');
    const email = optional('email');
    return { id, username, ...(name !== undefined ? { name } : {}), ...(email !== undefined ? { email } : {}) };
  }
}

function readTokens(connectorData: string | undefined): Tokens | undefined {
  if (connectorData === undefined) return undefined;
  try {
    const data = JSON.parse(connectorData) as { accessToken?: unknown; refreshToken?: unknown };
    if (typeof data.accessToken !== 'string' || data.accessToken === '') return undefined;
    return typeof data.refreshToken === 'string' && data.refreshToken !== '' ? { accessToken: data.accessToken, refreshToken: data.refreshToken } : { accessToken: data.accessToken };
  } catch {
    return undefined;
  }
}
