/**
 * The connector the factory returns: it warns about `insecureSkipSignatureValidation` at every
 * start, and loads ./saml.ts (and with it @node-saml/node-saml) at first use, so parsing and
 * `svc-server validate` never load the SAML library.
 */
import type { BrowserConnector, BrowserStart, ConnectorDeps, Identity, LoginContext } from '../connector.js';
import type { SamlConfig } from './config.js';
import type { SamlConnector } from './saml.js';

export class LazySamlConnector implements BrowserConnector {
  readonly kind = 'browser';
  private loaded: Promise<SamlConnector> | undefined;

  constructor(
    private readonly config: SamlConfig,
    private readonly deps: ConnectorDeps,
  ) {
    if (config.insecureSkipSignatureValidation) deps.log.warn('saml: insecureSkipSignatureValidation is on: SAML responses are accepted unsigned, so anyone can log in as anyone');
  }

  async begin(state: string, ctx: LoginContext): Promise<BrowserStart> {
    return (await this.connector()).begin(state, ctx);
  }

  async complete(params: URLSearchParams, saved: string | undefined, ctx: LoginContext): Promise<Identity> {
    return (await this.connector()).complete(params, saved, ctx);
  }

  async metadata(callbackUrl: string): Promise<string> {
    return (await this.connector()).metadata(callbackUrl);
  }

  private connector(): Promise<SamlConnector> {
    this.loaded ??= import('./saml.js').then(
      ({ SamlConnector }) => new SamlConnector(this.config, this.deps),
      (err: unknown) => {
        // Try again at the next login rather than keep a failed load for good.
        this.loaded = undefined;
        throw err;
      },
    );
    return this.loaded;
  }
}
