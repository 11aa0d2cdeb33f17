/**
 * A local stand-in for GitLab (gitlab.com or self-managed under one base URL), over HTTPS with a
 * certificate from a test CA. It follows GitLab's documented OAuth 2.0 provider and REST shapes;
 * nothing here is GitLab's code. Endpoints served:
 *
 *   GET  /oauth/authorize   "OAuth 2.0 identity provider API", authorization code flow
 *        (docs.gitlab.com/api/oauth2/): client_id, redirect_uri, response_type=code, scope,
 *        state; auto-approves as the signed-in user and redirects with `code` and `state`, or
 *        with `error=access_denied` when the user declines; an unknown client or a
 *        redirect_uri other than the registered one gets an error page, as on GitLab.
 *   POST /oauth/token       grant_type=authorization_code (code single use, redirect_uri must
 *        match) and grant_type=refresh_token (the refresh token rotates: the old one is then
 *        invalid_grant); client credentials in the body; errors as RFC 6749 §5.2 JSON
 *        (invalid_client 401, invalid_grant 400). Access tokens carry expires_in 7200.
 *   GET  /oauth/userinfo    OpenID Connect userinfo (docs.gitlab.com/integration/openid_connect_provider/):
 *        sub, name, nickname, preferred_username, email, email_verified, groups,
 *        groups_direct and the https://gitlab.org/claims/groups/{owner,maintainer,developer}
 *        claims; needs the openid scope (403 insufficient_scope otherwise)
 *   GET  /api/v4/user       "Get the current user" (docs.gitlab.com/api/users/); needs read_user
 *
 * A bad, revoked or expired token gets 401 `{"message":"401 Unauthorized"}`; `fail()` injects a
 * status (a 502) on a path.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { bearer, injected, json, newSecret, page, readForm, redirect, startHttpsFake, type HttpsFake, type InjectedFailure } from './fake-https.js';

export interface FakeGitlabUser {
  readonly id: number;
  readonly username: string;
  readonly name?: string;
  readonly email: string;
  /** Full paths, ancestors included where the user is a member through them. */
  readonly groups: readonly string[];
  readonly owner?: readonly string[];
  readonly maintainer?: readonly string[];
  readonly developer?: readonly string[];
}

export interface FakeGitlabOptions {
  readonly clientId: string;
  readonly clientSecret: string;
  /** The redirect URI registered for the application. */
  readonly redirectUri: string;
  readonly users: readonly FakeGitlabUser[];
}

interface Grant {
  readonly username: string;
  readonly scope: string;
  readonly redirectUri: string;
}

export interface FakeGitlab extends HttpsFake {
  signedIn: string;
  declining: boolean;
  readonly lastScope: () => string | undefined;
  fail(path: string, status: number, times?: number): void;
  /** Every access token issued so far expires (GitLab's last 2 h); refresh tokens stay good. */
  expireAccessTokens(): void;
  /** Every token, refresh tokens included, is revoked (the user revoked the application). */
  revokeAll(): void;
}

export async function startFakeGitlab(options: FakeGitlabOptions): Promise<FakeGitlab> {
  const codes = new Map<string, Grant>();
  const accessTokens = new Map<string, Grant>();
  const refreshTokens = new Map<string, Grant>();
  const failures: InjectedFailure[] = [];
  let lastScope: string | undefined;
  const state = { signedIn: options.users[0]?.username ?? '', declining: false };
  const user = (username: string): FakeGitlabUser | undefined => options.users.find((u) => u.username === username);

  function authorize(url: URL, res: ServerResponse): void {
    const q = url.searchParams;
    if (q.get('client_id') !== options.clientId) return page(res, 400, 'Client authentication failed due to unknown client');
    if (q.get('redirect_uri') !== options.redirectUri) return page(res, 400, 'The redirect URI included is not valid.');
    if (q.get('response_type') !== 'code') return page(res, 400, 'The authorization server does not support this response type.');
    const back = new URL(options.redirectUri);
    const stateParam = q.get('state');
    if (stateParam !== null) back.searchParams.set('state', stateParam);
    if (state.declining) {
      back.searchParams.set('error', 'access_denied');
      back.searchParams.set('error_description', 'The resource owner or authorization server denied the request.');
      return redirect(res, back);
    }
    if (user(state.signedIn) === undefined) return page(res, 403, 'No such user signed in');
    lastScope = q.get('scope') ?? '';
    const code = newSecret('code');
    codes.set(code, { username: state.signedIn, scope: lastScope, redirectUri: options.redirectUri });
    back.searchParams.set('code', code);
    redirect(res, back);
  }

  function issue(res: ServerResponse, grant: Grant): void {
    const access = newSecret('glpat');
    const refresh = newSecret('glrt');
    accessTokens.set(access, grant);
    refreshTokens.set(refresh, grant);
    json(res, 200, { access_token: access, token_type: 'Bearer', expires_in: 7200, refresh_token: refresh, scope: grant.scope, created_at: Math.floor(Date.now() / 1000) });
  }

  async function token(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const form = await readForm(req);
    if (form.get('client_id') !== options.clientId || form.get('client_secret') !== options.clientSecret) {
      return json(res, 401, { error: 'invalid_client', error_description: 'Client authentication failed due to unknown client, no client authentication included, or unsupported authentication method.' });
    }
    const invalidGrant = (): void => json(res, 400, { error: 'invalid_grant', error_description: 'The provided authorization grant is invalid, expired, revoked, does not match the redirection URI used in the authorization request, or was issued to another client.' });
    if (form.get('grant_type') === 'authorization_code') {
      const code = form.get('code') ?? '';
      const grant = codes.get(code);
      codes.delete(code);
      if (grant === undefined || form.get('redirect_uri') !== grant.redirectUri) return invalidGrant();
      return issue(res, grant);
    }
    if (form.get('grant_type') === 'refresh_token') {
      const old = form.get('refresh_token') ?? '';
      const grant = refreshTokens.get(old);
      refreshTokens.delete(old);
      if (grant === undefined) return invalidGrant();
      return issue(res, grant);
    }
    json(res, 400, { error: 'unsupported_grant_type', error_description: 'The authorization grant type is not supported by the authorization server.' });
  }

  function api(req: IncomingMessage, url: URL, res: ServerResponse): void {
    const failure = injected(failures, url.pathname);
    if (failure !== undefined) return json(res, failure.status, { message: `${failure.status} Server Error` });
    const t = bearer(req);
    const grant = t === undefined ? undefined : accessTokens.get(t);
    const who = grant === undefined ? undefined : user(grant.username);
    if (grant === undefined || who === undefined) return json(res, 401, { message: '401 Unauthorized' });
    const scopes = grant.scope.split(' ');
    if (url.pathname === '/api/v4/user') {
      if (!scopes.includes('read_user') && !scopes.includes('api')) return json(res, 403, { error: 'insufficient_scope', scope: 'read_user' });
      return json(res, 200, { id: who.id, username: who.username, name: who.name ?? who.username, state: 'active', email: who.email, web_url: `https://gitlab.example/${who.username}` });
    }
    if (url.pathname === '/oauth/userinfo') {
      if (!scopes.includes('openid')) return json(res, 403, { error: 'insufficient_scope', error_description: 'The request requires higher privileges than provided by the access token.', scope: 'openid' });
      return json(res, 200, {
        sub: String(who.id), name: who.name ?? who.username, nickname: who.username, preferred_username: who.username, email: who.email, email_verified: true,
        groups: who.groups, groups_direct: who.groups,
        'https://gitlab.org/claims/groups/owner': who.owner ?? [],
        'https://gitlab.org/claims/groups/maintainer': who.maintainer ?? [],
        'https://gitlab.org/claims/groups/developer': who.developer ?? [],
      });
    }
    json(res, 404, { message: '404 Not Found' });
  }

  const server = await startHttpsFake(async (req, url, res) => {
    if (req.method === 'GET' && url.pathname === '/oauth/authorize') return authorize(url, res);
    if (req.method === 'POST' && url.pathname === '/oauth/token') {
      if (injected(failures, url.pathname) !== undefined) return json(res, 502, { message: '502 Bad Gateway' });
      return token(req, res);
    }
    if (req.method === 'GET') return api(req, url, res);
    json(res, 404, { message: '404 Not Found' });
  });

  return {
    ...server,
    get signedIn() { return state.signedIn; },
    set signedIn(username: string) { state.signedIn = username; },
    get declining() { return state.declining; },
    set declining(value: boolean) { state.declining = value; },
    lastScope: () => lastScope,
    fail(path: string, status: number, times = 1) { failures.push({ path, status, times }); },
    expireAccessTokens() { accessTokens.clear(); },
    revokeAll() {
      accessTokens.clear();
      refreshTokens.clear();
    },
  };
}
