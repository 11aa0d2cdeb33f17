/**
 * oidc-provider as the upstream of the `oidc` connector, on plain HTTP or on HTTPS with a test
 * CA's certificate: one confidential client whose redirect is svc's callback, PKCE required,
 * refresh tokens for every code. Each account says which claims its ID token and its userinfo
 * carry, so tests can put a claim in one and not the other. The login page is replaced by an
 * interaction that signs in `loginAs` at once (the tests are about the connector, not forms).
 */
import { createServer as createHttp, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttps } from 'node:https';
import type { AddressInfo } from 'node:net';
import { Agent, fetch as undiciFetch } from 'undici';
import { exportJWK, generateKeyPair } from 'jose';
import Provider, { type Configuration } from 'oidc-provider';
import type { TestCa } from '../../helpers/test-ca.js';

export const UPSTREAM_CLIENT_ID = 'svc-upstream';
export const UPSTREAM_CLIENT_SECRET = 'upstream-client-secret-for-tests';
export const CALLBACK = 'https://svc.example.org/api/idp/callback';

export interface UpstreamAccount {
  readonly idToken: Record<string, unknown>;
  readonly userinfo?: Record<string, unknown>;
}

export interface UpstreamProvider {
  readonly issuer: string;
  readonly accounts: Map<string, UpstreamAccount>;
  /** Who the next login signs in as. */
  loginAs: string;
  /** Follows the browser's redirects from `url` (the connector's begin URL) back to svc's callback; its query. */
  roundTrip(url: string): Promise<URLSearchParams>;
  close(): Promise<void>;
}

const CLAIMS = ['name', 'preferred_username', 'email', 'email_verified', 'groups', 'upn', 'mail', 'roles', 'oid', 'dept', 'team'];

export interface UpstreamOptions {
  /** HTTPS with this CA's server certificate; plain HTTP without. */
  readonly ca?: TestCa;
  /** Answer a token request with the secret in a Basic header 401 invalid_client (providers that do not form-decode it, like LemonLDAP::NG, refuse a secret with `-`). */
  readonly refuseBasicAuth?: boolean;
}

export async function startUpstreamProvider(options: UpstreamOptions = {}): Promise<UpstreamProvider> {
  const accounts = new Map<string, UpstreamAccount>();
  const state = { loginAs: '' };
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = { ...(await exportJWK(privateKey)), alg: 'RS256', use: 'sig', kid: 'upstream-1' };
  let handler: (req: IncomingMessage, res: ServerResponse) => unknown = () => undefined;
  const listener = (req: IncomingMessage, res: ServerResponse): void => void handler(req, res);
  const server: Server = options.ca === undefined ? createHttp(listener) : createHttps({ cert: options.ca.certPem, key: options.ca.keyPem }, listener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `${options.ca === undefined ? 'http' : 'https'}://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const config: Configuration = {
    clients: [{
      client_id: UPSTREAM_CLIENT_ID, client_secret: UPSTREAM_CLIENT_SECRET, redirect_uris: [CALLBACK],
      grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'client_secret_basic',
    }],
    claims: { openid: ['sub'], profile: CLAIMS.filter((c) => !['email', 'email_verified', 'groups'].includes(c)), email: ['email', 'email_verified'], groups: ['groups'] },
    scopes: ['openid', 'offline_access', 'profile', 'email', 'groups'],
    conformIdTokenClaims: false,
    findAccount: (_ctx, sub) => {
      const account = accounts.get(sub);
      if (account === undefined) return undefined;
      return { accountId: sub, claims: (use) => ({ ...(use === 'userinfo' ? account.userinfo ?? account.idToken : account.idToken), sub }) };
    },
    issueRefreshToken: (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    features: { devInteractions: { enabled: false } },
    jwks: { keys: [jwk as never] },
    pkce: { required: () => true },
    ttl: { AccessToken: 600, AuthorizationCode: 60, IdToken: 600, Interaction: 600, Session: 600, Grant: 600, RefreshToken: 600 },
    cookies: { keys: ['upstream-cookie-key'] },
  };
  const provider = new Provider(issuer, config);
  provider.use(async (ctx, next) => {
    if (options.refuseBasicAuth === true && ctx.path === '/token' && /^Basic /i.test(ctx.get('authorization'))) {
      ctx.status = 401;
      ctx.set('WWW-Authenticate', 'Basic');
      ctx.body = { error: 'invalid_client' };
      return;
    }
    await next();
  });
  // The login page: signs `loginAs` in and grants what was asked.
  provider.use(async (ctx, next) => {
    if (!ctx.path.startsWith('/interaction/')) return next();
    const details = await provider.interactionDetails(ctx.req, ctx.res);
    const clientId = String(details.params['client_id']);
    const grant = new provider.Grant({ accountId: state.loginAs, clientId });
    grant.addOIDCScope(String(details.params['scope']));
    const grantId = await grant.save();
    ctx.redirect(await provider.interactionResult(ctx.req, ctx.res, { login: { accountId: state.loginAs }, consent: { grantId } }, { mergeWithLastSubmission: false }));
  });
  handler = provider.callback();

  const agent = options.ca === undefined ? undefined : new Agent({ connect: { ca: options.ca.caPem } });
  return {
    issuer,
    accounts,
    get loginAs() { return state.loginAs; },
    set loginAs(who: string) { state.loginAs = who; },
    async roundTrip(url) {
      const jar = new Map<string, string>();
      let next = url;
      for (let hop = 0; hop < 10; hop++) {
        const res = await undiciFetch(next, { redirect: 'manual', headers: { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') }, ...(agent !== undefined ? { dispatcher: agent } : {}) });
        for (const cookie of res.headers.getSetCookie()) {
          const [pair = ''] = cookie.split(';');
          const at = pair.indexOf('=');
          jar.set(pair.slice(0, at), pair.slice(at + 1));
        }
        await res.arrayBuffer();
        const location = res.headers.get('location');
        if (location === null) throw new Error(`the upstream stopped at ${next} with ${res.status}`);
        const target = new URL(location, next);
        if (target.href.startsWith(CALLBACK)) return target.searchParams;
        next = target.href;
      }
      throw new Error('more than 10 redirects');
    },
    close: () => new Promise<void>((resolve) => {
      void agent?.close();
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
