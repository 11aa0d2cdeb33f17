/**
 * The GitHub connector (an OAuth App, Dex's connector/github): the browser goes to
 * `/login/oauth/authorize` with the login's `state`, comes back with a code, which is exchanged
 * at `/login/oauth/access_token`; the REST API then gives the user (/user), the email
 * (/user/emails), the orgs (/user/orgs) and the teams (/user/teams), every list page by page.
 * GitHub Enterprise is the same under `https://<hostName>` (API at /api/v3).
 *
 * Refresh re-reads the user, email and groups with the access token kept in connectorData
 * (OAuth App tokens do not expire): a revoked token, or a user no longer let in, ends it.
 */
import type { BrowserConnector, BrowserStart, ConnectorDeps, Identity, LoginContext } from '../connector.js';
import { LoginRefused, UpstreamMisconfigured } from '../errors.js';
import { getAll, getJson, tokenGrant, TokenRejected, type Upstream } from '../oauth2/http.js';
import type { GithubConfig } from './config.js';
import { needsEmailList, pickEmail, readEmails } from './email.js';
import { decide, needsMemberships, type Memberships, type Team } from './groups.js';

export const NOT_A_MEMBER = 'your GitHub account is not a member of the organizations or teams allowed to log in here';
export const NO_VERIFIED_EMAIL = 'your GitHub account has no verified email address to log in with';
export const CANCELLED = 'the login was cancelled or refused at GitHub';

/** Requested per page (GitHub's maximum), so that most lists are one request. */
const PER_PAGE = 100;
/** GitHub's REST API version these requests follow. */
const API_VERSION = '2022-11-28';

export interface GithubUrls {
  readonly authorize: string;
  readonly token: string;
  readonly api: string;
}

/** github.com, or an Enterprise host (with its port, if it has one). */
export function githubUrls(hostName: string | undefined): GithubUrls {
  if (hostName === undefined) return { authorize: 'https://github.com/login/oauth/authorize', token: 'https://github.com/login/oauth/access_token', api: 'https://api.github.com' };
  const base = `https://${hostName}`;
  return { authorize: `${base}/login/oauth/authorize`, token: `${base}/login/oauth/access_token`, api: `${base}/api/v3` };
}

interface GithubUser {
  readonly id: string;
  readonly login: string;
  readonly name?: string;
  readonly email?: string;
}

export class GithubConnector implements BrowserConnector {
  readonly kind = 'browser';
  readonly #up: Upstream;
  readonly #urls: GithubUrls;

  constructor(private readonly config: GithubConfig, deps: ConnectorDeps) {
    this.#urls = githubUrls(config.hostName);
    this.#up = {
      fetch: deps.upstreamFetch(config.rootCA !== undefined ? [config.rootCA] : []),
      log: deps.log,
      name: 'github',
      headers: { 'user-agent': 'svc', 'x-github-api-version': API_VERSION },
    };
  }

  /** `user:email`, and `read:org` when orgs and teams are read (Dex's scopes). */
  scopes(wantGroups: boolean): string {
    return needsMemberships(this.config, wantGroups) ? 'user:email read:org' : 'user:email';
  }

  begin(state: string, ctx: LoginContext): Promise<BrowserStart> {
    const url = new URL(this.#urls.authorize);
    url.search = new URLSearchParams({ client_id: this.config.clientID, redirect_uri: ctx.callbackUrl, scope: this.scopes(ctx.wantGroups), state }).toString();
    return Promise.resolve({ via: 'redirect', url: url.href });
  }

  async complete(params: URLSearchParams, _saved: string | undefined, ctx: LoginContext): Promise<Identity> {
    const error = params.get('error');
    if (error !== null) {
      this.#up.log.info({ error, description: params.get('error_description')?.slice(0, 200) }, `github: the authorization answered ${error}`);
      if (error === 'access_denied') throw new LoginRefused(CANCELLED);
      throw new UpstreamMisconfigured();
    }
    const code = params.get('code');
    if (code === null || code === '') {
      this.#up.log.warn('github: the callback carries no code');
      throw new UpstreamMisconfigured();
    }
    const answer = await tokenGrant(this.#up, this.#urls.token, new URLSearchParams({
      client_id: this.config.clientID, client_secret: this.config.clientSecret, code, redirect_uri: ctx.callbackUrl,
    }), ctx.signal);
    if (!answer.ok) {
      this.#up.log.warn({ error: answer.error, description: answer.description }, `github: the code exchange was refused: ${answer.error}${hint(answer.error)}`);
      throw new UpstreamMisconfigured();
    }
    try {
      return await this.identity(answer.tokens.accessToken, ctx);
    } catch (err: unknown) {
      if (!(err instanceof TokenRejected)) throw err;
      this.#up.log.warn(`github: ${err.message} right after the code exchange`);
      throw new UpstreamMisconfigured();
    }
  }

  /** The identity again with the kept token; null when the token is gone (revoked, app removed). */
  async refresh(identity: Identity, ctx: LoginContext): Promise<Identity | null> {
    const token = readToken(identity.connectorData);
    if (token === undefined) return null;
    try {
      return await this.identity(token, ctx);
    } catch (err: unknown) {
      if (!(err instanceof TokenRejected)) throw err;
      this.#up.log.info('github: refresh refused: the access token was revoked');
      return null;
    }
  }

  private async identity(token: string, ctx: LoginContext): Promise<Identity> {
    const user = await this.user(token, ctx.signal);
    const email = await this.email(user, token, ctx.signal);
    let groups: readonly string[] = [];
    if (needsMemberships(this.config, ctx.wantGroups)) {
      const decision = decide(this.config, await this.memberships(token, ctx.signal), ctx.wantGroups);
      if (!decision.allowed) {
        this.#up.log.info({ login: user.login }, 'github: login refused: not in the configured orgs or teams');
        throw new LoginRefused(NOT_A_MEMBER);
      }
      groups = decision.groups;
    }
    return {
      userId: this.config.useLoginAsID ? user.login : user.id,
      username: user.name ?? user.login,
      preferredUsername: user.login,
      email,
      emailVerified: true,
      groups,
      connectorData: JSON.stringify({ accessToken: token }),
      // The profile's fields as read, for the claim rules.
      claims: { ...user, ...(email !== undefined ? { email } : {}), groups: [...groups] },
    };
  }

  private async user(token: string, signal: AbortSignal): Promise<GithubUser> {
    const { body } = await getJson(this.#up, 'GET /user', `${this.#urls.api}/user`, token, signal);
    const u = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
    const id = typeof u['id'] === 'number' || typeof u['id'] === 'string' ? String(u['id']) : undefined;
    const login = typeof u['login'] === 'string' && u['login'] !== '' ? u['login'] : undefined;
    if (id === undefined || login === undefined) {
      this.#up.log.warn('github: GET /user answered without id or login');
      throw new UpstreamMisconfigured();
    }
    const optional = (key: string): string | undefined => (typeof u[key] === 'string' && u[key] !== '' ? u[key] : undefined);
    const name = optional('name');
    const email = optional('email');
    return { id, login, ...(name !== undefined ? { name } : {}), ...(email !== undefined ? { email } : {}) };
  }

  private async email(user: GithubUser, token: string, signal: AbortSignal): Promise<string> {
    if (!needsEmailList(user.email, this.config.preferredEmailDomain) && user.email !== undefined) return user.email;
    const entries = readEmails(await getAll(this.#up, 'GET /user/emails', this.page('/user/emails'), token, signal));
    const email = pickEmail(entries, this.config.preferredEmailDomain) ?? user.email;
    if (email === undefined) {
      this.#up.log.info({ login: user.login }, 'github: login refused: no verified primary email');
      throw new LoginRefused(NO_VERIFIED_EMAIL);
    }
    return email;
  }

  private async memberships(token: string, signal: AbortSignal): Promise<Memberships> {
    const [orgs, teams] = await Promise.all([
      getAll(this.#up, 'GET /user/orgs', this.page('/user/orgs'), token, signal),
      getAll(this.#up, 'GET /user/teams', this.page('/user/teams'), token, signal),
    ]);
    return { orgs: orgs.flatMap(orgLogin), teams: teams.flatMap(readTeam) };
  }

  private page(path: string): string {
    return `${this.#urls.api}${path}?per_page=${PER_PAGE}`;
  }
}

function orgLogin(item: unknown): string[] {
  const login = (item as { login?: unknown } | null)?.login;
  return typeof login === 'string' && login !== '' ? [login] : [];
}

function readTeam(item: unknown): Team[] {
  const t = (item ?? {}) as { name?: unknown; slug?: unknown; organization?: { login?: unknown } };
  const org = t.organization?.login;
  if (typeof t.name !== 'string' || typeof t.slug !== 'string' || typeof org !== 'string') return [];
  return [{ org, name: t.name, slug: t.slug }];
}

function readToken(connectorData: string | undefined): string | undefined {
  if (connectorData === undefined) return undefined;
  try {
    const token = (JSON.parse(connectorData) as { accessToken?: unknown }).accessToken;
    return typeof token === 'string' && token !== '' ? token : undefined;
  } catch {
    return undefined;
  }
}

/** What an operator should look at for GitHub's token-endpoint errors. */
function hint(error: string): string {
  if (error === 'incorrect_client_credentials') return ': check clientID and clientSecret';
  if (error === 'redirect_uri_mismatch') return ': the OAuth App\'s callback URL must be <url>/api/idp/callback';
  if (error === 'bad_verification_code') return ': the code is wrong, used or expired';
  return '';
}
