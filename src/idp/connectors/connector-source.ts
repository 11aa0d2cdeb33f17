/**
 * What the provider needs from the connector registry: the connectors in force and a way to
 * reach one by id. The registry (connectors/registry.ts) builds connectors from idp.config;
 * the provider takes this small interface so it depends on no registry internals, and tests
 * hand it a fake connector that keeps the Connector contract.
 */
import type { Connector } from '../../../connectors/connector.js';

export interface ConnectorInfo {
  readonly id: string;
  readonly name: string;
  /** The connector type (`ldap`, `saml`, ...), as idp.config names it. */
  readonly type: string;
}

export interface ConnectorSource {
  /** The connectors users may choose from now, in idp.config order. */
  list(): readonly ConnectorInfo[];
  /** undefined when no connector has this id (any more). */
  get(id: string): Connector | undefined;
}
