/**
 * oidc-provider with nothing of svc around it, for bench/sso-login.ts to show what the library
 * alone gives on this machine under the same refresh load: the same version, RS256 ID tokens,
 * refresh tokens rotated at every use as svc's are, one confidential client; but accounts with
 * fixed claims (no connector, no directory), a plain Map for storage (no state backend, no grant
 * index; oidc-provider's own development adapter is not used: its grant bookkeeping is quadratic)
 * and no middleware. Seeds one grant and refresh token per chain, prints them as a JSON array on
 * a line of its own (the library prints notices too), then serves until SIGTERM.
 * Usage: node --import tsx bench/bare-provider.ts <port> <chains> <client-secret>
 */
import { generateKeyPairSync } from 'node:crypto';
import Provider, { type Adapter, type AdapterPayload } from 'oidc-provider';
import { ACCESS_TOKEN_TTL_S, GRANT_TTL_S, ID_TOKEN_TTL_S, REFRESH_TOKEN_TTL_S } from '../src/idp/lifetimes.js';

const [port = '0', chains = '8', secret = ''] = process.argv.slice(2);
const CLIENT_ID = 'bench';
const SCOPE = 'openid profile email groups offline_access';

const stores = new Map<string, Map<string, AdapterPayload>>();
class MapAdapter implements Adapter {
  private readonly records: Map<string, AdapterPayload>;
  constructor(name: string) {
    this.records = stores.get(name) ?? new Map();
    stores.set(name, this.records);
  }
  upsert(id: string, payload: AdapterPayload): Promise<void> {
    this.records.set(id, { ...payload });
    return Promise.resolve();
  }
  find(id: string): Promise<AdapterPayload | undefined> {
    return Promise.resolve(this.records.get(id));
  }
  findByUid(): Promise<undefined> {
    return Promise.resolve(undefined);
  }
  findByUserCode(): Promise<undefined> {
    return Promise.resolve(undefined);
  }
  consume(id: string): Promise<void> {
    const record = this.records.get(id);
    if (record !== undefined) record.consumed = Math.floor(Date.now() / 1000);
    return Promise.resolve();
  }
  destroy(id: string): Promise<void> {
    this.records.delete(id);
    return Promise.resolve();
  }
  revokeByGrantId(): Promise<void> {
    return Promise.resolve();
  }
}

const key = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });
const issuer = `http://127.0.0.1:${port}`;
const provider = new Provider(issuer, {
  adapter: MapAdapter,
  clients: [{ client_id: CLIENT_ID, client_secret: secret, redirect_uris: [`${issuer}/callback`], grant_types: ['authorization_code', 'refresh_token'] }],
  jwks: { keys: [{ ...key, kid: 'bench', use: 'sig', alg: 'RS256' }] },
  scopes: SCOPE.split(' '),
  claims: { email: ['email', 'email_verified'], profile: ['name', 'preferred_username'], groups: ['groups'] },
  conformIdTokenClaims: false,
  findAccount: (_ctx, sub) => ({
    accountId: sub,
    claims: () => ({ sub, email: 'alice@example.org', email_verified: true, name: 'Alice', preferred_username: 'alice', groups: ['admins', 'devs'] }),
  }),
  issueRefreshToken: () => true,
  rotateRefreshToken: true,
  ttl: { AccessToken: ACCESS_TOKEN_TTL_S, IdToken: ID_TOKEN_TTL_S, Grant: GRANT_TTL_S, RefreshToken: REFRESH_TOKEN_TTL_S },
  features: { devInteractions: { enabled: false } },
});

const client = await provider.Client.find(CLIENT_ID);
if (client === undefined) throw new Error('the bench client is missing');
const tokens: string[] = [];
for (let i = 0; i < Number(chains); i++) {
  const grant = new provider.Grant({ accountId: `user-${i}`, clientId: CLIENT_ID });
  grant.addOIDCScope(SCOPE);
  const grantId = await grant.save();
  tokens.push(await new provider.RefreshToken({ accountId: `user-${i}`, client, grantId, scope: SCOPE, gty: 'authorization_code' }).save());
}
provider.listen(Number(port), () => console.log(JSON.stringify(tokens)));
process.once('SIGTERM', () => process.exit(0));
