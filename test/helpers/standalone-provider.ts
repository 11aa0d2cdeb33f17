/**
 * oidc-provider as a process of its own, for e2e tests that want the provider apart from svc
 * (its own event loop, restarts, keys it reads at start): HTTPS with a test CA's certificate,
 * the dev interactions as its login page (any login name, any password), a confidential client
 * `svc` (redirect svc's /auth/callback) and a public native client `svc-cli` (loopback redirect,
 * any port, and the device flow). Groups come from the config's `accounts`.
 *
 * Run: node --import tsx test/helpers/standalone-provider.ts <config.json>
 * Prints `ready <issuer>` when listening, then `request <path>` for every request.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import Provider, { type Configuration } from 'oidc-provider';

export interface StandaloneConfig {
  readonly port: number;
  readonly certPem: string;
  readonly keyPem: string;
  /** Private signing JWKs, the first one signs. */
  readonly keys: readonly Record<string, unknown>[];
  readonly clientSecret: string;
  /** svc's /auth/callback URLs. */
  readonly redirectUris: readonly string[];
  readonly accounts: Readonly<Record<string, readonly string[]>>;
}

function providerConfig(config: StandaloneConfig): Configuration {
  return {
    clients: [{
      client_id: 'svc', client_secret: config.clientSecret, redirect_uris: [...config.redirectUris],
      grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'client_secret_basic',
    }, {
      client_id: 'svc-cli', application_type: 'native', redirect_uris: ['http://127.0.0.1/auth/callback'],
      grant_types: ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code'], response_types: ['code'], token_endpoint_auth_method: 'none',
    }],
    claims: { openid: ['sub'], email: ['email'], groups: ['groups'] },
    scopes: ['openid', 'offline_access', 'email', 'profile', 'groups'],
    conformIdTokenClaims: false,
    features: { devInteractions: { enabled: true }, deviceFlow: { enabled: true }, revocation: { enabled: true } },
    issueRefreshToken: (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    findAccount: (_ctx, sub) => {
      const groups = config.accounts[sub];
      if (groups === undefined) return undefined;
      return { accountId: sub, claims: () => ({ sub, email: `${sub}@example.com`, groups: [...groups] }) };
    },
    jwks: { keys: config.keys as never[] },
    pkce: { required: () => true },
    cookies: { keys: ['standalone-provider-cookie-key'] },
  };
}

const file = process.argv[2];
if (file === undefined) throw new Error('usage: standalone-provider.ts <config.json>');
const config = JSON.parse(readFileSync(file, 'utf8')) as StandaloneConfig;
const issuer = `https://127.0.0.1:${config.port}`;
const provider = new Provider(issuer, providerConfig(config));
provider.use(async (ctx, next) => {
  process.stdout.write(`request ${ctx.path}\n`);
  await next();
});
const server = createServer({ cert: config.certPem, key: config.keyPem }, provider.callback());
server.listen(config.port, '127.0.0.1', () => process.stdout.write(`ready ${issuer}\n`));
process.on('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
