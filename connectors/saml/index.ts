/**
 * The `saml` connector type: the parsed config and a factory for the connector. The
 * implementation, when it lands, loads @node-saml/node-saml with a dynamic import() at login, so
 * that parsing a config (and `svc-server validate`) never loads it (test/connectors/parse-path.test.ts).
 */
import type { ConnectorType } from '../connector.js';
import { parseSamlConfig } from './config.js';
import { NotImplementedBrowserConnector } from '../not-implemented.js';

export const saml = {
  type: 'saml',
  parse(input) {
    const config = parseSamlConfig(input);
    if (config === undefined) return undefined;
    return (deps) => {
      // Each insecure switch is said out loud where the connector is built.
      if (config.insecureSkipSignatureValidation) deps.log.warn('insecureSkipSignatureValidation is on: SAML responses are accepted unsigned');
      return new NotImplementedBrowserConnector('saml');
    };
  },
} satisfies ConnectorType;
