/**
 * A real OpenID provider nobody here wrote (oidc-provider), on its own HTTPS server with a
 * certificate of a test CA: a static confidential client `svc` and a public one `svc-pkce`, the dev interactions as its
 * login page, groups in the ID token and (possibly others) from userinfo at /me, refresh tokens
 * for every client allowed them. Tests can rotate its signing key, take userinfo down, and see
 * the requests it got (the `claims` parameter, JWKS fetches), and sign a token of their own with
 * its key (a logout token with a bad claim but a good signature). And the browser's side of it: a
 * browser that trusts the test CA for the provider, and a logout at the provider.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, importJWK, SignJWT, type JWTPayload } from 'jose';
import Provider, { type Configuration } from 'oidc-provider';
import { Agent, fetch as undiciFetch } from 'undici';
import { SsoBrowser } from './sso-browser.js';
import type { TestCa } from './test-ca.js';

export const PROVIDER_CLIENT_ID = 'svc';
export const PROVIDER_CLIENT_SECRET = 'provider-client-secret-for-tests';
/** A public client (no secret) whose redirect is svc's /pkce/verify. */
export const PROVIDER_PUBLIC_CLIENT_ID = 'svc-pkce';

export interface TestAccount {
  groups: string[];
  /** What /me says, when it differs from the ID token's groups. */
  userInfoGroups?: string[];
}

export interface TestProvider {
  readonly issuer: string;
  readonly accounts: Map<string, TestAccount>;
  /** Every request path (and `claims` query value of /auth), in order. */
  readonly requests: { path: string; claims?: string }[];
  userInfoDown: boolean;
  /** A new signing key first, the old one still published. */
  rotateKey(): Promise<void>;
  /** `claims` signed with the provider's current key, as its own tokens are (RS256, its kid). */
  sign(claims: JWTPayload, typ: string): Promise<string>;
  close(): Promise<void>;
}

export interface TestProviderOptions {
  readonly ca: TestCa;
  readonly redirectUris: readonly string[];
  readonly idTokenTtlSeconds?: number;
  /** The `svc` client's back-channel logout endpoint: the provider sends it a logout token (with `sid`) when a session ends. */
  readonly backchannelLogoutUri?: string;
}

type Jwk = Record<string, unknown>;

async function newKey(kid: string): Promise<Jwk> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  return { ...(await exportJWK(privateKey)), alg: 'RS256', use: 'sig', kid };
}

export async function startTestProvider(options: TestProviderOptions): Promise<TestProvider> {
  const accounts = new Map<string, TestAccount>();
  const requests: { path: string; claims?: string }[] = [];
  let keys: Jwk[] = [await newKey('key-1')];
  let handler: (req: IncomingMessage, res: ServerResponse) => unknown = () => undefined;
  const server: Server = createServer({ cert: options.ca.certPem, key: options.ca.keyPem }, (req, res) => void handler(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const state = { userInfoDown: false };

  function build(): Provider {
    const ttl = options.idTokenTtlSeconds ?? 3600;
    const config: Configuration = {
      clients: [{
        client_id: PROVIDER_CLIENT_ID, client_secret: PROVIDER_CLIENT_SECRET, redirect_uris: [...options.redirectUris],
        grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'client_secret_basic',
        ...(options.backchannelLogoutUri !== undefined ? { backchannel_logout_uri: options.backchannelLogoutUri, backchannel_logout_session_required: true } : {}),
      }, {
        client_id: PROVIDER_PUBLIC_CLIENT_ID, redirect_uris: options.redirectUris.map((u) => u.replace(/\/auth\/callback$/, '/pkce/verify')),
        grant_types: ['authorization_code'], response_types: ['code'], token_endpoint_auth_method: 'none',
      }],
      claims: { openid: ['sub'], email: ['email'], profile: ['name'], groups: ['groups'] },
      scopes: ['openid', 'offline_access', 'email', 'profile', 'groups'],
      conformIdTokenClaims: false,
      features: { claimsParameter: { enabled: true }, devInteractions: { enabled: true }, ...(options.backchannelLogoutUri !== undefined ? { backchannelLogout: { enabled: true } } : {}) },
      issueRefreshToken: (_ctx, client) => client.grantTypeAllowed('refresh_token'),
      expiresWithSession: () => false,
      findAccount: (_ctx, sub) => {
        const account = accounts.get(sub);
        if (account === undefined) return undefined;
        return {
          accountId: sub,
          claims: (use) => ({ sub, email: `${sub}@example.com`, groups: use === 'userinfo' ? (account.userInfoGroups ?? account.groups) : account.groups }),
        };
      },
      jwks: { keys: keys as never[] },
      pkce: { required: () => true },
      ttl: { AccessToken: 3600, AuthorizationCode: 60, IdToken: ttl, Interaction: 600, Session: 3600, Grant: 3600, RefreshToken: 3600 },
      cookies: { keys: ['provider-cookie-key'] },
      // Logout tokens go to svc on loopback: oidc-provider's dispatcher refuses special-use addresses
      // (SSRF protection), and it is built from the test run's global undici, not the runtime's fetch.
      fetch: (url, init) => {
        const { dispatcher: _ssrf, ...rest } = init as RequestInit & { dispatcher?: unknown };
        return globalThis.fetch(url, rest);
      },
    };
    const provider = new Provider(issuer, config);
    provider.use(async (ctx, next) => {
      requests.push({ path: ctx.path, ...(typeof ctx.query['claims'] === 'string' ? { claims: ctx.query['claims'] } : {}) });
      if (ctx.path === '/me' && state.userInfoDown) {
        ctx.status = 503;
        return;
      }
      await next();
    });
    return provider;
  }

  handler = build().callback();
  return {
    issuer,
    accounts,
    requests,
    get userInfoDown() { return state.userInfoDown; },
    set userInfoDown(down: boolean) { state.userInfoDown = down; },
    async rotateKey() {
      keys = [await newKey(`key-${keys.length + 1}`), ...keys];
      handler = build().callback();
    },
    async sign(claims, typ) {
      const key = keys[0] as Jwk;
      return new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: String(key['kid']), typ }).sign(await importJWK(key, 'RS256'));
    },
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

export interface ProviderBrowsers {
  /** A fresh browser (its own cookies) whose requests to the provider trust the test CA. */
  readonly browser: () => SsoBrowser;
  /** Closes the connections to the provider. */
  readonly close: () => Promise<void>;
}

export function providerBrowsers(ca: TestCa, issuer: string): ProviderBrowsers {
  const agent = new Agent({ connect: { ca: ca.caPem } });
  const providerFetch = (url: string, init: RequestInit) => undiciFetch(url, { ...(init as object), dispatcher: agent }) as unknown as Promise<Response>;
  return {
    browser: () => new SsoBrowser(providerFetch, issuer),
    close: () => agent.close(),
  };
}

/** Ends the browser's session at the provider: its logout page, then the confirmation form (`logout=yes`). */
export async function logOutAtProvider(browser: SsoBrowser, issuer: string): Promise<void> {
  const page = await browser.request(`${issuer}/session/end`);
  const html = await page.text();
  const xsrf = /name="xsrf" value="([^"]+)"/.exec(html)?.[1];
  const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
  if (xsrf === undefined || action === undefined) throw new Error(`no logout form at the provider ${issuer} (${page.status}): ${html.slice(0, 300)}`);
  const done = await browser.request(new URL(action, issuer).href, { method: 'POST', body: new URLSearchParams({ xsrf, logout: 'yes' }) });
  await done.body?.cancel();
}
