import type { BrowserConnector, BrowserStart, Identity } from './connector.js';

/**
 * The connector implementations (talking to GitHub, GitLab, an OIDC provider, a SAML IdP) come in
 * a later change; their config schemas and the registry are in place now. Until then a login
 * through one of them fails with this error, which says so, instead of something obscure.
 */
export class ConnectorNotImplemented extends Error {
  constructor(readonly type: string) {
    super(`the ${type} connector is not implemented yet: its configuration is checked, but it cannot sign anyone in`);
    this.name = 'ConnectorNotImplemented';
  }
}

/**
 * The one stand-in for every browser connector type not implemented yet (GitHub, GitLab,
 * upstream OIDC, SAML): its config was checked by its own type's parse(); begin() and complete()
 * refuse with ConnectorNotImplemented. An implementation replaces it in that type's index.ts.
 */
export class NotImplementedBrowserConnector implements BrowserConnector {
  readonly kind = 'browser';

  constructor(readonly type: string) {}

  begin(): Promise<BrowserStart> {
    return Promise.reject(new ConnectorNotImplemented(this.type));
  }

  complete(): Promise<Identity> {
    return Promise.reject(new ConnectorNotImplemented(this.type));
  }
}
