/** The `gitlab` connector type: the parsed config and a factory for the connector. */
import type { ConnectorType } from '../connector.js';
import { parseGitlabConfig } from './config.js';
import { GitlabConnector } from './gitlab.js';

export const gitlab = {
  type: 'gitlab',
  parse(input) {
    const config = parseGitlabConfig(input);
    if (config === undefined) return undefined;
    return (deps) => new GitlabConnector(config, deps);
  },
} satisfies ConnectorType;
