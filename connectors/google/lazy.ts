/**
 * The connector the factory returns: it takes the upstream fetch once (the TLS policy with the
 * connector's CA), builds the Directory API client when a service account is configured, and
 * loads ./google.ts (and with it openid-client) on the first login, so parsing and
 * `svc-server validate` never load it.
 */
import type { BrowserConnector, BrowserStart, ConnectorDeps, Identity, LoginContext } from '../connector.js';
import { DirectoryTokens } from './access-token.js';
import type { GoogleConfig } from './config.js';
import type { Directory } from './directory.js';
import type { GoogleConnector } from './google.js';

export class LazyGoogleConnector implements BrowserConnector {
  readonly kind = 'browser';
  private loaded: Promise<GoogleConnector> | undefined;
  private readonly fetchImpl: typeof globalThis.fetch;
  private readonly directory: Directory | undefined;

  constructor(
    private readonly config: GoogleConfig,
    private readonly deps: ConnectorDeps,
  ) {
    this.fetchImpl = deps.upstreamFetch(config.rootCA !== undefined ? [config.rootCA] : []);
    const { serviceAccountKey: key, domainToAdminEmail: admins } = config;
    if (key !== undefined && admins !== undefined) {
      const up = { fetch: this.fetchImpl, log: deps.log, name: 'google' };
      this.directory = { up, tokens: new DirectoryTokens(key, up, deps.now), url: config.directoryURL, admins };
    }
    if (new URL(config.issuer).protocol === 'http:') deps.log.warn({ issuer: config.issuer }, 'google: the issuer is plain http: codes and tokens travel unencrypted');
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

  private connector(): Promise<GoogleConnector> {
    this.loaded ??= import('./google.js').then(
      ({ GoogleConnector }) => new GoogleConnector(this.config, this.deps, this.fetchImpl, this.directory),
      (err: unknown) => {
        // Try again at the next login rather than keep a failed load for good.
        this.loaded = undefined;
        throw err;
      },
    );
    return this.loaded;
  }
}
