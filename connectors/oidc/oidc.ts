/**
 * The OIDC connector (authorization code by redirect). A stub until the implementation lands in a
 * later change: begin() and complete() throw ConnectorNotImplemented.
 */
import type { BrowserConnector, BrowserStart, ConnectorDeps, Identity } from '../connector.js';
import { ConnectorNotImplemented } from '../not-implemented.js';
import type { OidcConnectorConfig } from './config.js';

export class OidcConnector implements BrowserConnector {
  readonly kind = 'browser';

  constructor(
    readonly config: OidcConnectorConfig,
    readonly deps: ConnectorDeps,
  ) {}

  begin(): Promise<BrowserStart> {
    return Promise.reject(new ConnectorNotImplemented('oidc'));
  }

  complete(): Promise<Identity> {
    return Promise.reject(new ConnectorNotImplemented('oidc'));
  }
}
