/**
 * A local stand-in for Microsoft Entra ID (its v2.0 endpoints) and for the two Microsoft Graph
 * calls svc makes, on one HTTPS server whose certificate comes from a test CA. It follows
 * Microsoft's documented shapes (learn.microsoft.com: "Microsoft identity platform and OAuth 2.0
 * authorization code flow", "OpenID Connect on the Microsoft identity platform", "ID token claims
 * reference", "Configure group claims", Graph v1.0 "user: getMemberObjects", "directoryObject:
 * getByIds", "Paging Microsoft Graph data", "Microsoft Graph throttling guidance"); nothing here
 * is Microsoft's code. Served, for `<tenant>` = the tenant id, its domain, `organizations` or
 * `common`:
 *
 *   GET  /<tenant>/v2.0/.well-known/openid-configuration   issuer `<url>/<tid>/v2.0`, or
 *        `<url>/{tenantid}/v2.0` for organizations and common; the endpoints below
 *   GET  /<tenant>/oauth2/v2.0/authorize   client_id, redirect_uri (must be the registered one),
 *        response_type=code, scope, state, nonce, code_challenge (S256); signs in `signedIn`
 *        and redirects back with code and state, or error=access_denied when `declining`
 *   POST /<tenant>/oauth2/v2.0/token   grant_type=authorization_code with client_id and
 *        client_secret in the body, code (single use), redirect_uri, code_verifier; answers
 *        token_type, scope, expires_in, access_token, id_token. Errors as AADSTS JSON
 *        (invalid_client 401, invalid_grant 400)
 *   GET  /<tenant>/discovery/v2.0/keys   the JWKS (RS256)
 *   POST /v1.0/me/getMemberObjects   { securityEnabledOnly }: { value: [ids] }, `pageSize` ids
 *        a page with `@odata.nextLink` (GET) for the rest; needs GroupMember.Read.All (or
 *        Directory.Read.All) in the access token's scope, else 403 Authorization_RequestDenied
 *   POST /v1.0/directoryObjects/getByIds   { ids (at most 1000), types }: the group objects
 *        (`@odata.type`, id, displayName, securityEnabled, mailEnabled, groupTypes)
 *
 * The ID token (v2.0) carries aud, iss, iat, nbf, exp, name, nonce, oid, preferred_username,
 * email, sub, tid, ver and `groups` (the user's group ids, security groups only when the app's
 * `groupMembershipClaims` is SecurityGroup); past 200 groups there is no `groups` claim but the
 * overage indication `_claim_names` / `_claim_sources`. `fail()` answers a status (with headers,
 * such as Retry-After on a 429) on a path for some requests; `graphCalls` counts Graph requests.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { makeSigningKey, signToken, type SigningKey } from './fake-oidc-keys.js';
import { bearer, json, newSecret, page, readForm, redirect, startHttpsFake, type HttpsFake } from './fake-https.js';

/** JWTs carry at most this many groups; past it, the overage indication (Microsoft's documented limit). */
export const TOKEN_GROUP_LIMIT = 200;

export interface FakeEntraGroup {
  readonly id: string;
  readonly displayName: string;
  readonly securityEnabled: boolean;
}

export interface FakeEntraUser {
  readonly oid: string;
  readonly name: string;
  readonly upn: string;
  readonly email?: string;
  /** Ids of the groups the user is a member of (transitively). */
  readonly groups: readonly string[];
  /** The user's tenant, when not the stand-in's own. */
  readonly tid?: string;
}

export interface FakeEntraOptions {
  readonly tenantId: string;
  /** A verified domain of the tenant, usable as the tenant segment. */
  readonly domain: string;
  readonly clientId: string;
  readonly clientSecret: string;
  readonly redirectUri: string;
  readonly users: readonly FakeEntraUser[];
  readonly groups: readonly FakeEntraGroup[];
  /** groupMembershipClaims of the app registration. */
  readonly groupMembershipClaims?: 'SecurityGroup' | 'All';
  /** Ids a getMemberObjects page holds. */
  readonly pageSize?: number;
}

interface Grant {
  readonly user: FakeEntraUser;
  readonly scope: string;
  readonly nonce: string;
  readonly challenge: string;
  readonly tenantSegment: string;
}

interface Failure {
  readonly path: string;
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  times: number;
}

export interface FakeEntra extends HttpsFake {
  signedIn: string;
  declining: boolean;
  /** Replaces claims of the next ID tokens (a forged iss or tid), or undefined. */
  tamper: ((claims: Record<string, unknown>) => Record<string, unknown>) | undefined;
  /** Graph requests served, by path (pages followed included). */
  readonly graphCalls: Map<string, number>;
  lastScope(): string | undefined;
  fail(path: string, status: number, times?: number, headers?: Record<string, string>): void;
  clearFailures(): void;
}

export async function startFakeEntra(options: FakeEntraOptions): Promise<FakeEntra> {
  const key: SigningKey = await makeSigningKey();
  const codes = new Map<string, Grant>();
  const accessTokens = new Map<string, Grant>();
  const pages = new Map<string, readonly string[]>();
  const failures: Failure[] = [];
  const graphCalls = new Map<string, number>();
  const pageSize = options.pageSize ?? 100;
  const claimsMode = options.groupMembershipClaims ?? 'SecurityGroup';
  const state = { signedIn: options.users[0]?.upn ?? '', declining: false, lastScope: undefined as string | undefined };
  let tamper: FakeEntra['tamper'];
  let base = '';
  const tenants = new Set([options.tenantId, options.domain, 'organizations', 'common']);
  const groupById = new Map(options.groups.map((g) => [g.id, g]));

  const failure = (path: string): Failure | undefined => {
    const f = failures.find((x) => path.startsWith(x.path) && x.times > 0);
    if (f !== undefined) f.times -= 1;
    return f;
  };

  function discovery(segment: string, res: ServerResponse): void {
    const multi = segment === 'organizations' || segment === 'common';
    json(res, 200, {
      token_endpoint: `${base}/${segment}/oauth2/v2.0/token`,
      token_endpoint_auth_methods_supported: ['client_secret_post', 'private_key_jwt', 'client_secret_basic'],
      jwks_uri: `${base}/${segment}/discovery/v2.0/keys`,
      response_modes_supported: ['query', 'fragment', 'form_post'],
      subject_types_supported: ['pairwise'],
      id_token_signing_alg_values_supported: ['RS256'],
      response_types_supported: ['code', 'id_token', 'code id_token', 'id_token token'],
      scopes_supported: ['openid', 'profile', 'email', 'offline_access'],
      issuer: `${base}/${multi ? '{tenantid}' : options.tenantId}/v2.0`,
      request_uri_parameter_supported: false,
      userinfo_endpoint: 'https://graph.microsoft.com/oidc/userinfo',
      authorization_endpoint: `${base}/${segment}/oauth2/v2.0/authorize`,
      end_session_endpoint: `${base}/${segment}/oauth2/v2.0/logout`,
      claims_supported: ['sub', 'iss', 'aud', 'exp', 'iat', 'nonce', 'preferred_username', 'name', 'tid', 'ver', 'email'],
      tenant_region_scope: 'EU',
      cloud_instance_name: 'microsoftonline.com',
    });
  }

  function authorize(segment: string, url: URL, res: ServerResponse): void {
    const q = url.searchParams;
    if (q.get('client_id') !== options.clientId) return page(res, 400, `AADSTS700016: Application with identifier '${q.get('client_id') ?? ''}' was not found in the directory.`);
    if (q.get('redirect_uri') !== options.redirectUri) return page(res, 400, 'AADSTS50011: The redirect URI specified in the request does not match the redirect URIs configured for the application.');
    if (q.get('response_type') !== 'code' || q.get('code_challenge_method') !== 'S256' || q.get('code_challenge') === null) return page(res, 400, 'AADSTS900144: The request body must contain the following parameter.');
    const back = new URL(options.redirectUri);
    const s = q.get('state');
    if (s !== null) back.searchParams.set('state', s);
    if (state.declining) {
      back.searchParams.set('error', 'access_denied');
      back.searchParams.set('error_description', 'AADSTS65004: User declined to consent to access the app.');
      return redirect(res, back);
    }
    const user = options.users.find((u) => u.upn === state.signedIn);
    if (user === undefined) return page(res, 403, 'No such user signed in');
    state.lastScope = q.get('scope') ?? '';
    const code = newSecret('code');
    codes.set(code, { user, scope: state.lastScope, nonce: q.get('nonce') ?? '', challenge: q.get('code_challenge') ?? '', tenantSegment: segment });
    back.searchParams.set('code', code);
    redirect(res, back);
  }

  function visibleGroups(user: FakeEntraUser): string[] {
    return user.groups.filter((id) => claimsMode === 'All' || groupById.get(id)?.securityEnabled === true);
  }

  async function idToken(grant: Grant): Promise<string> {
    const { user } = grant;
    const tid = user.tid ?? options.tenantId;
    const now = Math.floor(Date.now() / 1000);
    const groups = visibleGroups(user);
    let claims: Record<string, unknown> = {
      aud: options.clientId, iss: `${base}/${tid}/v2.0`, iat: now, nbf: now, exp: now + 3600,
      name: user.name, nonce: grant.nonce, oid: user.oid, preferred_username: user.upn,
      ...(user.email !== undefined ? { email: user.email } : {}),
      rh: '0.AAAA', sub: createHash('sha256').update(`${user.oid}:${options.clientId}`).digest('base64url'), tid, uti: randomUUID(), ver: '2.0',
      ...(groups.length <= TOKEN_GROUP_LIMIT
        ? (groups.length > 0 ? { groups } : {})
        : { _claim_names: { groups: 'src1' }, _claim_sources: { src1: { endpoint: `https://graph.windows.net/${tid}/users/${user.oid}/getMemberObjects` } } }),
    };
    if (tamper !== undefined) claims = tamper(claims);
    return signToken(key, claims);
  }

  async function token(segment: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const form = await readForm(req);
    if (form.get('client_id') !== options.clientId || form.get('client_secret') !== options.clientSecret) {
      return json(res, 401, { error: 'invalid_client', error_description: 'AADSTS7000215: Invalid client secret provided.', error_codes: [7000215] });
    }
    const invalidGrant = (what: string): void => json(res, 400, { error: 'invalid_grant', error_description: `AADSTS70008: ${what}`, error_codes: [70008] });
    if (form.get('grant_type') !== 'authorization_code') return json(res, 400, { error: 'unsupported_grant_type', error_description: 'AADSTS70003: The app requested an unsupported grant type.' });
    const code = form.get('code') ?? '';
    const grant = codes.get(code);
    codes.delete(code);
    if (grant === undefined || grant.tenantSegment !== segment) return invalidGrant('The provided authorization code or refresh token has expired or was already used.');
    if (form.get('redirect_uri') !== options.redirectUri) return invalidGrant('The redirect URI does not match the one of the authorization request.');
    const verifier = form.get('code_verifier') ?? '';
    if (createHash('sha256').update(verifier).digest('base64url') !== grant.challenge) return invalidGrant('AADSTS501481: The Code_Verifier does not match the code_challenge supplied in the authorization request.');
    const access = newSecret('eyJ0eXAiOiJKV1Qi');
    accessTokens.set(access, grant);
    json(res, 200, { token_type: 'Bearer', scope: grant.scope, expires_in: 3599, ext_expires_in: 3599, access_token: access, id_token: await idToken(grant) });
  }

  function graphGrant(req: IncomingMessage, res: ServerResponse): Grant | undefined {
    const t = bearer(req);
    const grant = t === undefined ? undefined : accessTokens.get(t);
    if (grant === undefined) {
      json(res, 401, { error: { code: 'InvalidAuthenticationToken', message: 'Access token validation failure. Invalid audience.' } });
      return undefined;
    }
    const scopes = grant.scope.split(' ');
    if (!scopes.some((s) => s === `${base}/GroupMember.Read.All` || s === `${base}/Directory.Read.All`)) {
      json(res, 403, { error: { code: 'Authorization_RequestDenied', message: 'Insufficient privileges to complete the operation.' } });
      return undefined;
    }
    return grant;
  }

  function memberPage(ids: readonly string[], res: ServerResponse): void {
    const first = ids.slice(0, pageSize);
    const rest = ids.slice(pageSize);
    let next: string | undefined;
    if (rest.length > 0) {
      const skip = newSecret('skiptoken');
      pages.set(skip, rest);
      next = `${base}/v1.0/me/getMemberObjects?$skiptoken=${skip}`;
    }
    json(res, 200, { '@odata.context': `${base}/v1.0/$metadata#Collection(Edm.String)`, value: first, ...(next !== undefined ? { '@odata.nextLink': next } : {}) });
  }

  function graph(req: IncomingMessage, url: URL, res: ServerResponse): void {
    graphCalls.set(url.pathname, (graphCalls.get(url.pathname) ?? 0) + 1);
    const f = failure(url.pathname);
    if (f !== undefined) return json(res, f.status, { error: { code: f.status === 429 ? 'TooManyRequests' : 'generalException', message: 'injected' } }, { ...f.headers });
    const grant = graphGrant(req, res);
    if (grant === undefined) return;
    if (url.pathname === '/v1.0/me/getMemberObjects' && req.method === 'GET') {
      const skip = url.searchParams.get('$skiptoken') ?? '';
      const rest = pages.get(skip);
      pages.delete(skip);
      if (rest === undefined) return json(res, 400, { error: { code: 'Request_BadRequest', message: 'Invalid skip token.' } });
      return memberPage(rest, res);
    }
    json(res, 404, { error: { code: 'Request_ResourceNotFound', message: 'not found' } });
  }

  async function readJsonBody(req: IncomingMessage): Promise<Record<string, unknown>> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const value = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
    return typeof value === 'object' && value !== null ? value as Record<string, unknown> : {};
  }

  async function graphPost(req: IncomingMessage, url: URL, res: ServerResponse): Promise<void> {
    graphCalls.set(url.pathname, (graphCalls.get(url.pathname) ?? 0) + 1);
    const f = failure(url.pathname);
    if (f !== undefined) return json(res, f.status, { error: { code: f.status === 429 ? 'TooManyRequests' : 'generalException', message: 'injected' } }, { ...f.headers });
    const grant = graphGrant(req, res);
    if (grant === undefined) return;
    const body = await readJsonBody(req);
    if (url.pathname === '/v1.0/me/getMemberObjects') {
      if (typeof body['securityEnabledOnly'] !== 'boolean') return json(res, 400, { error: { code: 'Request_BadRequest', message: 'securityEnabledOnly is required.' } });
      const ids = grant.user.groups.filter((id) => body['securityEnabledOnly'] !== true || groupById.get(id)?.securityEnabled === true);
      return memberPage(ids, res);
    }
    if (url.pathname === '/v1.0/directoryObjects/getByIds') {
      const ids = body['ids'];
      if (!Array.isArray(ids) || ids.length > 1000) return json(res, 400, { error: { code: 'Request_BadRequest', message: 'ids: at most 1000.' } });
      const found = ids.flatMap((id) => {
        const g = typeof id === 'string' ? groupById.get(id) : undefined;
        return g === undefined ? [] : [{ '@odata.type': '#microsoft.graph.group', id: g.id, displayName: g.displayName, securityEnabled: g.securityEnabled, mailEnabled: !g.securityEnabled, groupTypes: g.securityEnabled ? [] : ['Unified'] }];
      });
      return json(res, 200, { '@odata.context': `${base}/v1.0/$metadata#directoryObjects`, value: found });
    }
    json(res, 404, { error: { code: 'Request_ResourceNotFound', message: 'not found' } });
  }

  const server = await startHttpsFake(async (req, url, res) => {
    if (url.pathname.startsWith('/v1.0/')) return req.method === 'POST' ? graphPost(req, url, res) : graph(req, url, res);
    const match = /^\/([^/]+)\/(.*)$/.exec(url.pathname);
    const segment = match?.[1] ?? '';
    const rest = match?.[2] ?? '';
    if (!tenants.has(segment)) return json(res, 400, { error: 'invalid_tenant', error_description: `AADSTS90002: Tenant '${segment}' not found.` });
    if (req.method === 'GET' && rest === 'v2.0/.well-known/openid-configuration') return discovery(segment, res);
    if (req.method === 'GET' && rest === 'oauth2/v2.0/authorize') return authorize(segment, url, res);
    if (req.method === 'POST' && rest === 'oauth2/v2.0/token') {
      const f = failure(url.pathname);
      if (f !== undefined) return json(res, f.status, { error: 'temporarily_unavailable' }, { ...f.headers });
      return token(segment, req, res);
    }
    if (req.method === 'GET' && rest === 'discovery/v2.0/keys') return json(res, 200, { keys: [key.publicJwk] });
    json(res, 404, { error: 'not_found' });
  });
  base = server.url;

  return {
    ...server,
    get signedIn() { return state.signedIn; },
    set signedIn(upn: string) { state.signedIn = upn; },
    get declining() { return state.declining; },
    set declining(value: boolean) { state.declining = value; },
    get tamper() { return tamper; },
    set tamper(value) { tamper = value; },
    graphCalls,
    lastScope: () => state.lastScope,
    fail(path: string, status: number, times = 1, headers: Record<string, string> = {}) { failures.push({ path, status, times, headers }); },
    clearFailures() { failures.length = 0; },
  };
}
