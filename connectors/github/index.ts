/** The `github` connector type: the parsed config and a factory for the connector. */
import type { ConnectorType } from '../connector.js';
import { parseGithubConfig } from './config.js';
import { GithubConnector } from './github.js';

export const github = {
  type: 'github',
  parse(input) {
    const config = parseGithubConfig(input);
    if (config === undefined) return undefined;
    return (deps) => new GithubConnector(config, deps);
  },
} satisfies ConnectorType;
