/**
 * The GitHub connector (OAuth2 by redirect). A stub until the implementation lands in a later
 * change: begin() and complete() throw ConnectorNotImplemented.
 */
import type { BrowserConnector, BrowserStart, ConnectorDeps, Identity } from '../connector.js';
import { ConnectorNotImplemented } from '../not-implemented.js';
import type { GithubConfig } from './config.js';

export class GithubConnector implements BrowserConnector {
  readonly kind = 'browser';

  constructor(
    readonly config: GithubConfig,
    readonly deps: ConnectorDeps,
  ) {}

  begin(): Promise<BrowserStart> {
    return Promise.reject(new ConnectorNotImplemented('github'));
  }

  complete(): Promise<Identity> {
    return Promise.reject(new ConnectorNotImplemented('github'));
  }
}
