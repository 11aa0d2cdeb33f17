/**
 * A local stand-in for GitHub (Enterprise layout: OAuth under `/login/oauth`, REST under
 * `/api/v3`), over HTTPS with a certificate from a test CA. It follows GitHub's documented
 * OAuth App flow and REST shapes; nothing here is GitHub's code. Endpoints served:
 *
 *   GET  /login/oauth/authorize     "Authorizing OAuth apps", web application flow, step 1
 *        (docs.github.com/en/apps/oauth-apps/building-oauth-apps/authorizing-oauth-apps):
 *        auto-approves as the signed-in user and redirects to redirect_uri with `code` and
 *        `state`, or with `error=access_denied` when the user declines; an unknown client_id
 *        gets an error page, as on GitHub.
 *   POST /login/oauth/access_token  step 2: client_id, client_secret, code, redirect_uri; JSON
 *        with `Accept: application/json`; errors as GitHub sends them, with HTTP 200:
 *        incorrect_client_credentials, bad_verification_code (unknown, used or expired code),
 *        redirect_uri_mismatch. A code is good once.
 *   GET  /api/v3/user               "Get the authenticated user" (docs.github.com/en/rest/users/users)
 *   GET  /api/v3/user/emails        "List email addresses for the authenticated user"
 *        (docs.github.com/en/rest/users/emails); needs the user:email scope
 *   GET  /api/v3/user/orgs          "List organizations for the authenticated user"
 *        (docs.github.com/en/rest/orgs/orgs); needs read:org here
 *   GET  /api/v3/user/teams         "List teams for the authenticated user"
 *        (docs.github.com/en/rest/teams/teams); needs read:org
 *
 * The lists paginate as GitHub documents ("Using pagination in the REST API": `per_page`,
 * `page`, a Link header with rel="next"/"last"), with `perPage` capping `per_page` small so
 * that tests see several pages. A bad or revoked token gets 401 `{"message":"Bad credentials"}`;
 * a missing scope 403; `fail()` injects a status (a 502) on a path.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { bearer, injected, json, newSecret, page, paginate, readForm, redirect, startHttpsFake, type HttpsFake, type InjectedFailure } from './fake-https.js';

export interface FakeGithubTeam {
  readonly org: string;
  readonly name: string;
  readonly slug: string;
}

export interface FakeGithubUser {
  readonly id: number;
  readonly login: string;
  readonly name?: string;
  /** The public email of /user (null there when unset). */
  readonly email?: string;
  readonly emails: readonly { readonly email: string; readonly verified: boolean; readonly primary: boolean }[];
  readonly orgs: readonly string[];
  readonly teams: readonly FakeGithubTeam[];
}

export interface FakeGithubOptions {
  readonly clientId: string;
  readonly clientSecret: string;
  readonly users: readonly FakeGithubUser[];
  /** The largest per_page served (GitHub: 100); small so lists span pages. Default 2. */
  readonly perPage?: number;
}

interface Grant {
  readonly login: string;
  readonly scope: string;
  readonly redirectUri: string;
}

export interface FakeGithub extends HttpsFake {
  /** The user the browser is signed in to GitHub as; the authorize step approves for them. */
  signedIn: string;
  /** The next authorizations are declined by the user (error=access_denied). */
  declining: boolean;
  /** Every API request: method, path with query, and the scope of its token. */
  readonly requests: { path: string; scope?: string }[];
  /** The scope asked at the last authorization. */
  readonly lastScope: () => string | undefined;
  /** Injects `status` on requests whose path starts with `path`, `times` times. */
  fail(path: string, status: number, times?: number): void;
  /** Revokes every token issued so far (the user removed the app). */
  revokeAll(): void;
  /** Grants the user made: an access token for `login` without going through the browser. */
  tokenFor(login: string, scope: string): string;
}

const API = '/api/v3';

export async function startFakeGithub(options: FakeGithubOptions): Promise<FakeGithub> {
  const codes = new Map<string, Grant>();
  const tokens = new Map<string, Grant>();
  const failures: InjectedFailure[] = [];
  const requests: { path: string; scope?: string }[] = [];
  let lastScope: string | undefined;
  const perPage = options.perPage ?? 2;
  const user = (login: string): FakeGithubUser | undefined => options.users.find((u) => u.login === login);

  const state = { signedIn: options.users[0]?.login ?? '', declining: false };
  let base = '';

  function authorize(url: URL, res: ServerResponse): void {
    const q = url.searchParams;
    if (q.get('client_id') !== options.clientId) return page(res, 404, 'Not Found: unknown client_id');
    const redirectUri = q.get('redirect_uri') ?? '';
    if (!URL.canParse(redirectUri)) return page(res, 400, 'The redirect_uri is not a URL');
    const back = new URL(redirectUri);
    const stateParam = q.get('state');
    if (stateParam !== null) back.searchParams.set('state', stateParam);
    if (state.declining) {
      back.searchParams.set('error', 'access_denied');
      back.searchParams.set('error_description', 'The user has denied your application access.');
      return redirect(res, back);
    }
    const login = q.get('login') ?? state.signedIn;
    if (user(login) === undefined) return page(res, 403, 'No such user signed in');
    lastScope = q.get('scope') ?? '';
    const code = newSecret('code');
    codes.set(code, { login, scope: lastScope, redirectUri });
    back.searchParams.set('code', code);
    redirect(res, back);
  }

  async function accessToken(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const form = await readForm(req);
    if (form.get('client_id') !== options.clientId || form.get('client_secret') !== options.clientSecret) {
      return json(res, 200, { error: 'incorrect_client_credentials', error_description: 'The client_id and/or client_secret passed are incorrect.' });
    }
    const code = form.get('code') ?? '';
    const grant = codes.get(code);
    codes.delete(code);
    if (grant === undefined) return json(res, 200, { error: 'bad_verification_code', error_description: 'The code passed is incorrect or expired.' });
    if (form.has('redirect_uri') && form.get('redirect_uri') !== grant.redirectUri) {
      return json(res, 200, { error: 'redirect_uri_mismatch', error_description: 'The redirect_uri MUST match the registered callback URL for this application.' });
    }
    const token = newSecret('gho');
    tokens.set(token, grant);
    const answer = { access_token: token, token_type: 'bearer', scope: grant.scope.split(' ').join(',') };
    // Without Accept: application/json GitHub answers form-encoded.
    if (!(req.headers.accept ?? '').includes('application/json')) {
      res.writeHead(200, { 'content-type': 'application/x-www-form-urlencoded' });
      return void res.end(new URLSearchParams(answer).toString());
    }
    json(res, 200, answer);
  }

  function api(req: IncomingMessage, url: URL, res: ServerResponse): void {
    const token = bearer(req);
    const grant = token === undefined ? undefined : tokens.get(token);
    requests.push({ path: `${url.pathname}${url.search}`, ...(grant !== undefined ? { scope: grant.scope } : {}) });
    const failure = injected(failures, url.pathname);
    if (failure !== undefined) return json(res, failure.status, { message: 'Server Error' });
    const who = grant === undefined ? undefined : user(grant.login);
    if (grant === undefined || who === undefined) return json(res, 401, { message: 'Bad credentials', documentation_url: 'https://docs.github.com/rest' });
    const scopes = grant.scope.split(/[ ,]+/);
    const list = <T>(items: readonly T[], shape: (item: T) => unknown): void => {
      const { items: slice, link } = paginate(items, url, base, perPage);
      json(res, 200, slice.map(shape), link !== undefined ? { link } : {});
    };
    const path = url.pathname.slice(API.length);
    if (path === '/user') return json(res, 200, { login: who.login, id: who.id, type: 'User', name: who.name ?? null, email: who.email ?? null });
    if (path === '/user/emails') {
      if (!scopes.includes('user:email') && !scopes.includes('user')) return json(res, 404, { message: 'Not Found' });
      return list(who.emails, (e) => ({ ...e, visibility: e.primary ? 'private' : null }));
    }
    if (!scopes.includes('read:org')) return json(res, 403, { message: 'Resource not accessible by integration' });
    if (path === '/user/orgs') return list(who.orgs, (login) => ({ login, id: login.length, url: `${base}${API}/orgs/${login}` }));
    if (path === '/user/teams') {
      return list(who.teams, (t) => ({ name: t.name, slug: t.slug, id: t.slug.length, organization: { login: t.org } }));
    }
    json(res, 404, { message: 'Not Found' });
  }

  const server = await startHttpsFake(async (req, url, res) => {
    if (req.method === 'GET' && url.pathname === '/login/oauth/authorize') return authorize(url, res);
    if (req.method === 'POST' && url.pathname === '/login/oauth/access_token') {
      if (injected(failures, url.pathname) !== undefined) return json(res, 502, { message: 'Server Error' });
      return accessToken(req, res);
    }
    if (req.method === 'GET' && url.pathname.startsWith(`${API}/`)) return api(req, url, res);
    json(res, 404, { message: 'Not Found' });
  });
  base = server.url;

  return {
    ...server,
    get signedIn() { return state.signedIn; },
    set signedIn(login: string) { state.signedIn = login; },
    get declining() { return state.declining; },
    set declining(value: boolean) { state.declining = value; },
    requests,
    lastScope: () => lastScope,
    fail(path: string, status: number, times = 1) { failures.push({ path, status, times }); },
    revokeAll() { tokens.clear(); },
    tokenFor(login: string, scope: string) {
      const token = newSecret('gho');
      tokens.set(token, { login, scope, redirectUri: '' });
      return token;
    },
  };
}
