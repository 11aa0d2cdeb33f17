/**
 * The connector the factory returns: it takes the upstream fetch once (the TLS policy with the
 * connector's CAs), warns about risky settings once, at start, and loads ./oidc.ts (and with it
 * openid-client) on the first login, so parsing and `svc-server validate` never load it.
 */
import type { BrowserConnector, BrowserStart, ConnectorDeps, Identity, LoginContext, LogoutTokenSource } from '../connector.js';
import type { OidcConnectorConfig } from './config.js';
import type { OidcConnector } from './oidc.js';

export class LazyOidcConnector implements BrowserConnector {
  readonly kind = 'browser';
  private loaded: Promise<OidcConnector> | undefined;
  private readonly fetchImpl: typeof globalThis.fetch;
  /** The upstream's logout tokens: aud is svc's client id there; keys from its discovered JWKS. */
  readonly logoutTokens: LogoutTokenSource;

  constructor(
    private readonly config: OidcConnectorConfig,
    private readonly deps: ConnectorDeps,
  ) {
    this.fetchImpl = deps.upstreamFetch([...(config.rootCA !== undefined ? [config.rootCA] : []), ...(config.rootCAs ?? [])]);
    this.logoutTokens = { issuer: config.issuer, clientId: config.clientID, keys: async () => (await this.connector()).logoutKeys() };
    warnAtStart(config, deps);
  }

  async begin(state: string, ctx: LoginContext): Promise<BrowserStart> {
    return (await this.connector()).begin(state, ctx);
  }

  async complete(params: URLSearchParams, saved: string | undefined, ctx: LoginContext): Promise<Identity> {
    return (await this.connector()).complete(params, saved, ctx);
  }

  async refresh(identity: Identity, ctx: LoginContext): Promise<Identity | null> {
    return (await this.connector()).refresh(identity, ctx);
  }

  private connector(): Promise<OidcConnector> {
    this.loaded ??= import('./oidc.js').then(
      ({ OidcConnector }) => new OidcConnector(this.config, this.deps, this.fetchImpl),
      (err: unknown) => {
        // Try again at the next login rather than keep a failed load for good.
        this.loaded = undefined;
        throw err;
      },
    );
    return this.loaded;
  }
}

function warnAtStart(config: OidcConnectorConfig, { log }: ConnectorDeps): void {
  if (config.providerDiscoveryOverrides !== undefined) {
    log.warn({ overrides: Object.keys(config.providerDiscoveryOverrides) }, 'oidc: providerDiscoveryOverrides replace endpoints the provider publishes');
  }
  if (new URL(config.issuer).protocol === 'http:') log.warn({ issuer: config.issuer }, 'oidc: the issuer is plain http: codes and tokens travel unencrypted');
  if (config.insecureSkipEmailVerified) log.warn('oidc: insecureSkipEmailVerified: a missing email_verified claim counts as verified');
  if (config.insecureEnableGroups && !config.getUserInfo) log.warn('oidc: insecureEnableGroups has no effect without getUserInfo: true (groups need both)');
  if (config.insecureEnableGroups && config.getUserInfo) log.warn('oidc: insecureEnableGroups: the provider\'s groups are trusted as they come');
}
