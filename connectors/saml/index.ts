/** The `saml` connector type: the parsed config and a factory for the connector. */
import type { ConnectorType } from '../connector.js';
import { parseSamlConfig } from './config.js';
import { SamlConnector } from './saml.js';

export const saml = {
  type: 'saml',
  parse(input) {
    const config = parseSamlConfig(input);
    if (config === undefined) return undefined;
    return (deps) => {
      // Each insecure switch is said out loud where the connector is built.
      if (config.insecureSkipSignatureValidation) deps.log.warn('insecureSkipSignatureValidation is on: SAML responses are accepted unsigned');
      return new SamlConnector(config, deps);
    };
  },
} satisfies ConnectorType;
