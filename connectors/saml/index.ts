/**
 * The `saml` connector type: the parsed config and a factory for the connector. The connector
 * (./lazy.ts) loads @node-saml/node-saml with a dynamic import() at first use, so that parsing a
 * config (and `svc-server validate`) never loads it (test/connectors/parse-path.test.ts).
 */
import type { ConnectorType } from '../connector.js';
import { parseSamlConfig } from './config.js';
import { LazySamlConnector } from './lazy.js';

export const saml = {
  type: 'saml',
  parse(input) {
    const config = parseSamlConfig(input);
    if (config === undefined) return undefined;
    return (deps) => new LazySamlConnector(config, deps);
  },
} satisfies ConnectorType;
