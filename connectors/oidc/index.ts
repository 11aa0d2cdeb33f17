/**
 * The `oidc` connector type: an upstream OpenID Connect provider (Dex's oidc connector, keys
 * unchanged but for those svc refuses, see ./config.ts). Parsing resolves secret references and
 * checks the config; openid-client is loaded on the first login (./lazy.ts).
 */
import type { ConnectorType } from '../connector.js';
import { parseOidcConnectorConfig } from './config.js';
import { LazyOidcConnector } from './lazy.js';

export const oidc = {
  type: 'oidc',
  parse(input) {
    const config = parseOidcConnectorConfig(input);
    if (config === undefined) return undefined;
    return (deps) => new LazyOidcConnector(config, deps);
  },
} satisfies ConnectorType;
