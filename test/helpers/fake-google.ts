/**
 * A local stand-in for Google (its OpenID Connect provider, its OAuth 2.0 token endpoint and the
 * Admin SDK Directory API) under one HTTPS base URL with a certificate from a test CA. It follows
 * Google's documented shapes; nothing here is Google's code. Endpoints served:
 *
 *   GET  /.well-known/openid-configuration   the discovery document ("OpenID Connect",
 *        developers.google.com/identity/openid-connect/openid-connect), its issuer this base URL
 *   GET  /o/oauth2/v2/auth   client_id, redirect_uri, response_type=code, scope, state, nonce,
 *        code_challenge (S256), and Google's own hd, access_type=offline and prompt; approves as
 *        the signed-in user and redirects back with `code` and `state`, or with
 *        `error=access_denied` when the user declines; an unknown client or redirect_uri gets an
 *        error page (Google's "Error 400: redirect_uri_mismatch")
 *   POST /token              grant_type=authorization_code (client_secret_basic or _post, PKCE
 *        checked, the code single use; a refresh token only with access_type=offline);
 *        grant_type=refresh_token (a new ID token, the same refresh token); and
 *        grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer ("Using OAuth 2.0 for Server to
 *        Server Applications", developers.google.com/identity/protocols/oauth2/service-account):
 *        the assertion's RS256 signature is checked against the service account's public key,
 *        iss = client_email, aud = the token URI, a `scope` claim, `sub` a user of the directory,
 *        at most an hour between iat and exp; answers {access_token, expires_in: 3599,
 *        token_type: "Bearer"}; unauthorized_client when domain-wide delegation is not granted;
 *        errors as RFC 6749 §5.2 JSON
 *   GET  /oauth2/v3/certs    the JWKS of the ID tokens (RS256)
 *   GET  /admin/directory/v1/groups?userKey=&maxResults=&pageToken=   "groups.list"
 *        (developers.google.com/admin-sdk/directory/reference/rest/v1/groups/list): the groups
 *        the user or group is a direct member of, as {kind: "admin#directory#groups", groups:
 *        [{kind, id, etag, email, name, directMembersCount, adminCreated}], nextPageToken}, no
 *        `groups` when there are none; needs a bearer token of the jwt-bearer grant with the
 *        admin.directory.group(.readonly) scope, acting as an administrator of the key's domain
 *        (else 403 "Not Authorized to access this resource/api"); errors as Google's JSON
 *        {error: {code, message, errors, status}}
 *
 * The ID token carries iss, azp, aud, sub, email, email_verified (the user's `emailVerified`,
 * true by default), name, hd (a Workspace user's domain; none for a consumer account), nonce,
 * iat and exp. `fail()` injects a status on a path.
 */
import { createHash, generateKeyPairSync, type KeyObject } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { exportJWK, jwtVerify, SignJWT } from 'jose';
import { bearer, injected, json, newSecret, page, readForm, redirect, startHttpsFake, type HttpsFake, type InjectedFailure } from './fake-https.js';

export interface FakeGoogleUser {
  readonly sub: string;
  readonly email: string;
  readonly name: string;
  /** The Workspace domain; absent for a consumer (gmail.com) account. */
  readonly hd?: string;
  /** The ID token's email_verified (true when absent): false for an address Google has not confirmed. */
  readonly emailVerified?: boolean;
}

export interface FakeGoogleOptions {
  readonly clientId: string;
  readonly clientSecret: string;
  readonly redirectUri: string;
  readonly users: readonly FakeGoogleUser[];
  /** Group email -> the emails (users or groups) that are its direct members. */
  readonly groups: Readonly<Record<string, readonly string[]>>;
  /** Administrators the service account may act as (domain-wide delegation). */
  readonly admins: readonly string[];
  /** Groups per page of groups.list (Google's default and maximum: 200). */
  readonly pageSize?: number;
}

export const DIRECTORY_SCOPE = 'https://www.googleapis.com/auth/admin.directory.group.readonly';
const TOKEN_LIFETIME_S = 3599;

interface Code {
  readonly sub: string;
  readonly nonce: string | undefined;
  readonly challenge: string | undefined;
  readonly redirectUri: string;
  readonly offline: boolean;
}

export interface FakeGoogle extends HttpsFake {
  signedIn: string;
  declining: boolean;
  /** Whether the service account's client id is granted domain-wide delegation. */
  delegated: boolean;
  /** The service account's JSON key file, as the Cloud console downloads it (token_uri this fake's). */
  readonly keyFile: string;
  readonly clientEmail: string;
  /** The query of the last authorization request. */
  readonly lastAuthorize: () => URLSearchParams | undefined;
  /** How many jwt-bearer grants were answered with a token, per administrator. */
  readonly grants: () => ReadonlyMap<string, number>;
  /** The userKey of every groups.list request, in order. */
  readonly directoryRequests: () => readonly string[];
  fail(path: string, status: number, times?: number): void;
  /** Every access token of the jwt-bearer grant is revoked (the API answers 401). */
  revokeServiceTokens(): void;
}

export async function startFakeGoogle(options: FakeGoogleOptions): Promise<FakeGoogle> {
  const signing = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const serviceAccount = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const kid = newSecret('kid');
  const codes = new Map<string, Code>();
  const refreshTokens = new Map<string, string>();
  const serviceTokens = new Map<string, string>();
  const grants = new Map<string, number>();
  const directoryRequests: string[] = [];
  const failures: InjectedFailure[] = [];
  const pageSize = options.pageSize ?? 200;
  const clientEmail = 'svc-groups@svc-test-project.iam.gserviceaccount.com';
  let lastAuthorize: URLSearchParams | undefined;
  const state = { signedIn: options.users[0]?.email ?? '', declining: false, delegated: true };
  let base = '';
  const user = (key: string): FakeGoogleUser | undefined => options.users.find((u) => u.email === key || u.sub === key);

  function discovery(res: ServerResponse): void {
    json(res, 200, {
      issuer: base,
      authorization_endpoint: `${base}/o/oauth2/v2/auth`,
      token_endpoint: `${base}/token`,
      userinfo_endpoint: `${base}/v1/userinfo`,
      revocation_endpoint: `${base}/revoke`,
      jwks_uri: `${base}/oauth2/v3/certs`,
      response_types_supported: ['code', 'token', 'id_token', 'code token', 'code id_token', 'token id_token', 'code token id_token', 'none'],
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: ['RS256'],
      scopes_supported: ['openid', 'email', 'profile'],
      token_endpoint_auth_methods_supported: ['client_secret_post', 'client_secret_basic'],
      claims_supported: ['aud', 'email', 'email_verified', 'exp', 'family_name', 'given_name', 'iat', 'iss', 'name', 'picture', 'sub'],
      code_challenge_methods_supported: ['plain', 'S256'],
      grant_types_supported: ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code', 'urn:ietf:params:oauth:grant-type:jwt-bearer'],
    });
  }

  function authorize(url: URL, res: ServerResponse): void {
    const q = url.searchParams;
    lastAuthorize = q;
    if (q.get('client_id') !== options.clientId) return page(res, 401, 'Error 401: invalid_client');
    if (q.get('redirect_uri') !== options.redirectUri) return page(res, 400, 'Error 400: redirect_uri_mismatch');
    if (q.get('response_type') !== 'code') return page(res, 400, 'Error 400: invalid_request');
    const back = new URL(options.redirectUri);
    const stateParam = q.get('state');
    if (stateParam !== null) back.searchParams.set('state', stateParam);
    if (state.declining) {
      back.searchParams.set('error', 'access_denied');
      return redirect(res, back);
    }
    const who = user(state.signedIn);
    if (who === undefined) return page(res, 403, 'No such account signed in');
    const code = `4/${newSecret('code')}`;
    codes.set(code, { sub: who.sub, nonce: q.get('nonce') ?? undefined, challenge: q.get('code_challenge') ?? undefined, redirectUri: options.redirectUri, offline: q.get('access_type') === 'offline' });
    back.searchParams.set('code', code);
    back.searchParams.set('scope', q.get('scope') ?? '');
    redirect(res, back);
  }

  async function idToken(who: FakeGoogleUser, nonce: string | undefined): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ azp: options.clientId, email: who.email, email_verified: who.emailVerified ?? true, name: who.name, ...(who.hd !== undefined ? { hd: who.hd } : {}), ...(nonce !== undefined ? { nonce } : {}) })
      .setProtectedHeader({ alg: 'RS256', kid, typ: 'JWT' })
      .setIssuer(base).setAudience(options.clientId).setSubject(who.sub).setIssuedAt(now).setExpirationTime(now + TOKEN_LIFETIME_S)
      .sign(signing.privateKey);
  }

  function clientAuthenticated(req: IncomingMessage, form: URLSearchParams): boolean {
    const basic = /^basic\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
    if (basic !== undefined) {
      const [id, secret] = Buffer.from(basic, 'base64').toString('utf8').split(':').map((p) => decodeURIComponent(p));
      return id === options.clientId && secret === options.clientSecret;
    }
    return form.get('client_id') === options.clientId && form.get('client_secret') === options.clientSecret;
  }

  async function codeGrant(req: IncomingMessage, form: URLSearchParams, res: ServerResponse): Promise<void> {
    if (!clientAuthenticated(req, form)) return json(res, 401, { error: 'invalid_client', error_description: 'Unauthorized' });
    const code = codes.get(form.get('code') ?? '');
    codes.delete(form.get('code') ?? '');
    const verifier = form.get('code_verifier') ?? '';
    const pkceOk = code?.challenge === undefined || createHash('sha256').update(verifier).digest('base64url') === code.challenge;
    const who = code === undefined ? undefined : user(code.sub);
    if (code === undefined || who === undefined || form.get('redirect_uri') !== code.redirectUri || !pkceOk) return json(res, 400, { error: 'invalid_grant', error_description: 'Bad Request' });
    const refresh = code.offline ? `1//${newSecret('refresh')}` : undefined;
    if (refresh !== undefined) refreshTokens.set(refresh, who.sub);
    json(res, 200, {
      access_token: `ya29.${newSecret('access')}`, expires_in: TOKEN_LIFETIME_S, token_type: 'Bearer', scope: 'openid email profile',
      id_token: await idToken(who, code.nonce), ...(refresh !== undefined ? { refresh_token: refresh } : {}),
    });
  }

  async function refreshGrant(req: IncomingMessage, form: URLSearchParams, res: ServerResponse): Promise<void> {
    if (!clientAuthenticated(req, form)) return json(res, 401, { error: 'invalid_client', error_description: 'Unauthorized' });
    const sub = refreshTokens.get(form.get('refresh_token') ?? '');
    const who = sub === undefined ? undefined : user(sub);
    if (who === undefined) return json(res, 400, { error: 'invalid_grant', error_description: 'Token has been expired or revoked.' });
    json(res, 200, { access_token: `ya29.${newSecret('access')}`, expires_in: TOKEN_LIFETIME_S, token_type: 'Bearer', scope: 'openid email profile', id_token: await idToken(who, undefined) });
  }

  async function jwtBearerGrant(form: URLSearchParams, res: ServerResponse): Promise<void> {
    const invalid = (description: string): void => json(res, 400, { error: 'invalid_grant', error_description: description });
    let payload: Record<string, unknown>;
    try {
      ({ payload } = await jwtVerify(form.get('assertion') ?? '', serviceAccount.publicKey, { algorithms: ['RS256'], issuer: clientEmail, audience: `${base}/token` }));
    } catch {
      return invalid('Invalid JWT Signature.');
    }
    const { iat, exp, sub, scope } = payload;
    if (typeof iat !== 'number' || typeof exp !== 'number' || exp - iat > 3600) return invalid('Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.');
    if (typeof scope !== 'string' || scope === '') return json(res, 400, { error: 'invalid_scope', error_description: 'Invalid OAuth scope or ID token audience provided.' });
    if (typeof sub !== 'string' || user(sub) === undefined) return invalid('Invalid email or User ID');
    if (!state.delegated) return json(res, 401, { error: 'unauthorized_client', error_description: 'Client is unauthorized to retrieve access tokens using this method, or client not authorized for any of the scopes requested.' });
    const token = `ya29.${newSecret('sa')}`;
    serviceTokens.set(token, `${sub} ${scope}`);
    grants.set(sub, (grants.get(sub) ?? 0) + 1);
    json(res, 200, { access_token: token, expires_in: TOKEN_LIFETIME_S, token_type: 'Bearer' });
  }

  async function token(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const form = await readForm(req);
    const grant = form.get('grant_type');
    if (grant === 'authorization_code') return codeGrant(req, form, res);
    if (grant === 'refresh_token') return refreshGrant(req, form, res);
    if (grant === 'urn:ietf:params:oauth:grant-type:jwt-bearer') return jwtBearerGrant(form, res);
    json(res, 400, { error: 'unsupported_grant_type', error_description: `Invalid grant_type: ${grant ?? ''}` });
  }

  function apiError(res: ServerResponse, code: number, message: string, reason: string): void {
    json(res, code, { error: { code, message, errors: [{ message, domain: 'global', reason }] } });
  }

  function listGroups(req: IncomingMessage, url: URL, res: ServerResponse): void {
    const t = bearer(req);
    const grant = t === undefined ? undefined : serviceTokens.get(t);
    if (grant === undefined) return apiError(res, 401, 'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.', 'authError');
    const [admin = '', scope = ''] = grant.split(' ');
    const userKey = url.searchParams.get('userKey') ?? '';
    directoryRequests.push(userKey);
    const domain = (email: string): string => email.slice(email.lastIndexOf('@') + 1);
    if (!scope.split(' ').some((s) => s === DIRECTORY_SCOPE || s === DIRECTORY_SCOPE.replace('.readonly', '')) || !options.admins.includes(admin) || domain(admin) !== domain(userKey)) {
      return apiError(res, 403, 'Not Authorized to access this resource/api', 'forbidden');
    }
    if (user(userKey) === undefined && options.groups[userKey] === undefined) return apiError(res, 404, 'Resource Not Found: userKey', 'notFound');
    const all = Object.entries(options.groups).filter(([, members]) => members.includes(userKey)).map(([email]) => email);
    const size = Math.min(pageSize, Math.max(1, Number(url.searchParams.get('maxResults') ?? pageSize) || pageSize));
    const pageToken = url.searchParams.get('pageToken');
    const start = pageToken === null ? 0 : Number(Buffer.from(pageToken, 'base64url').toString('utf8').split('|')[1]);
    if (!Number.isInteger(start) || start < 0) return apiError(res, 400, 'Invalid Input: pageToken', 'invalid');
    const slice = all.slice(start, start + size);
    const next = start + size < all.length ? Buffer.from(`${userKey}|${start + size}`).toString('base64url') : undefined;
    json(res, 200, {
      kind: 'admin#directory#groups',
      etag: '"fake-etag"',
      ...(slice.length > 0 ? { groups: slice.map((email) => ({ kind: 'admin#directory#group', id: createHash('sha1').update(email).digest('hex').slice(0, 16), etag: '"g"', email, name: email.split('@')[0], directMembersCount: String(options.groups[email]?.length ?? 0), adminCreated: true })) } : {}),
      ...(next !== undefined ? { nextPageToken: next } : {}),
    });
  }

  const server = await startHttpsFake(async (req, url, res) => {
    const failure = injected(failures, url.pathname);
    if (failure !== undefined) return apiError(res, failure.status, 'Backend Error', 'backendError');
    if (req.method === 'GET' && url.pathname === '/.well-known/openid-configuration') return discovery(res);
    if (req.method === 'GET' && url.pathname === '/o/oauth2/v2/auth') return authorize(url, res);
    if (req.method === 'POST' && url.pathname === '/token') return token(req, res);
    if (req.method === 'GET' && url.pathname === '/oauth2/v3/certs') return json(res, 200, { keys: [{ ...(await exportJWK(signing.publicKey)), kid, alg: 'RS256', use: 'sig' }] });
    if (req.method === 'GET' && url.pathname === '/admin/directory/v1/groups') return listGroups(req, url, res);
    json(res, 404, { error: { code: 404, message: 'Not Found' } });
  });
  base = server.url;

  const keyFile = JSON.stringify({
    type: 'service_account',
    project_id: 'svc-test-project',
    private_key_id: newSecret('keyid'),
    private_key: (serviceAccount.privateKey as KeyObject).export({ type: 'pkcs8', format: 'pem' }).toString(),
    client_email: clientEmail,
    client_id: '109876543210987654321',
    auth_uri: `${base}/o/oauth2/auth`,
    token_uri: `${base}/token`,
    auth_provider_x509_cert_url: `${base}/oauth2/v1/certs`,
    client_x509_cert_url: `${base}/robot/v1/metadata/x509/${encodeURIComponent(clientEmail)}`,
    universe_domain: 'googleapis.com',
  }, null, 2);

  return {
    ...server,
    get signedIn() { return state.signedIn; },
    set signedIn(email: string) { state.signedIn = email; },
    get declining() { return state.declining; },
    set declining(value: boolean) { state.declining = value; },
    get delegated() { return state.delegated; },
    set delegated(value: boolean) { state.delegated = value; },
    keyFile,
    clientEmail,
    lastAuthorize: () => lastAuthorize,
    grants: () => grants,
    directoryRequests: () => directoryRequests,
    fail(path: string, status: number, times = 1) { failures.push({ path, status, times }); },
    revokeServiceTokens() { serviceTokens.clear(); },
  };
}
