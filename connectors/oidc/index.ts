/** The `oidc` connector type: the parsed config and a factory for the connector. */
import type { ConnectorType } from '../connector.js';
import { parseOidcConnectorConfig } from './config.js';
import { NotImplementedBrowserConnector } from '../not-implemented.js';

export const oidc = {
  type: 'oidc',
  parse(input) {
    const config = parseOidcConnectorConfig(input);
    if (config === undefined) return undefined;
    return (deps) => {
      if (config.providerDiscoveryOverrides !== undefined) {
        deps.log.warn({ overrides: Object.keys(config.providerDiscoveryOverrides) }, 'providerDiscoveryOverrides replace endpoints the provider publishes');
      }
      return new NotImplementedBrowserConnector('oidc');
    };
  },
} satisfies ConnectorType;
