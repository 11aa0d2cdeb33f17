/** The `github` connector type: the parsed config and a factory for the connector. */
import type { ConnectorType } from '../connector.js';
import { parseGithubConfig } from './config.js';
import { NotImplementedBrowserConnector } from '../not-implemented.js';

export const github = {
  type: 'github',
  parse(input) {
    const config = parseGithubConfig(input);
    if (config === undefined) return undefined;
    return () => new NotImplementedBrowserConnector('github');
  },
} satisfies ConnectorType;
