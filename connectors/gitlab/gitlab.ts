/**
 * The GitLab connector (OAuth2 by redirect). A stub until the implementation lands in a later
 * change: begin() and complete() throw ConnectorNotImplemented.
 */
import type { BrowserConnector, BrowserStart, ConnectorDeps, Identity } from '../connector.js';
import { ConnectorNotImplemented } from '../not-implemented.js';
import type { GitlabConfig } from './config.js';

export class GitlabConnector implements BrowserConnector {
  readonly kind = 'browser';

  constructor(
    readonly config: GitlabConfig,
    readonly deps: ConnectorDeps,
  ) {}

  begin(): Promise<BrowserStart> {
    return Promise.reject(new ConnectorNotImplemented('gitlab'));
  }

  complete(): Promise<Identity> {
    return Promise.reject(new ConnectorNotImplemented('gitlab'));
  }
}
