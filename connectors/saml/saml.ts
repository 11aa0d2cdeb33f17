/**
 * The SAML 2.0 connector (HTTP-POST binding). A stub until the implementation lands in a later
 * change: begin() and complete() throw ConnectorNotImplemented. The implementation will load
 * @node-saml/node-saml with a dynamic import() inside these methods, so that parsing a config
 * (and `svc-server validate`) never loads it (test/connectors/parse-path.test.ts).
 */
import type { BrowserConnector, BrowserStart, ConnectorDeps, Identity } from '../connector.js';
import { ConnectorNotImplemented } from '../not-implemented.js';
import type { SamlConfig } from './config.js';

export class SamlConnector implements BrowserConnector {
  readonly kind = 'browser';

  constructor(
    readonly config: SamlConfig,
    readonly deps: ConnectorDeps,
  ) {}

  begin(): Promise<BrowserStart> {
    return Promise.reject(new ConnectorNotImplemented('saml'));
  }

  complete(): Promise<Identity> {
    return Promise.reject(new ConnectorNotImplemented('saml'));
  }
}
