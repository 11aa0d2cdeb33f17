/** The `gitlab` connector type: the parsed config and a factory for the connector. */
import type { ConnectorType } from '../connector.js';
import { parseGitlabConfig } from './config.js';
import { NotImplementedBrowserConnector } from '../not-implemented.js';

export const gitlab = {
  type: 'gitlab',
  parse(input) {
    const config = parseGitlabConfig(input);
    if (config === undefined) return undefined;
    return () => new NotImplementedBrowserConnector('gitlab');
  },
} satisfies ConnectorType;
