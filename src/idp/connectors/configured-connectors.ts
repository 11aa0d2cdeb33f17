/**
 * A ConnectorSource over idp.config: the connector registry (connectors/registry.ts) is brought up
 * to date whenever the parsed config is a new one, so connector changes apply without a restart;
 * an entry that cannot be built keeps the connector in force for its id (see the registry).
 */
import type { Logger } from 'pino';
import { ConnectorRegistry, type ConnectorRegistryDeps } from '../../../connectors/registry.js';
import type { IdpConfig, ParsedConnector } from './config.js';
import type { ConnectorSource } from './connector-source.js';

export function createConfiguredConnectors(config: () => IdpConfig | undefined, open: ConnectorRegistryDeps['open'], log: Logger): ConnectorSource & { close(): Promise<void> } {
  const registry = new ConnectorRegistry({ open, log });
  let applied: readonly ParsedConnector[] | undefined;
  /** Settings parsing hands out a new list only when idp.config changed. */
  function current(): ConnectorRegistry {
    const entries = config()?.connectors ?? [];
    if (entries !== applied) {
      applied = entries;
      // update() puts the new connectors in force before it returns; what is left is closing the old ones.
      registry.update(entries).catch((err: unknown) => log.warn({ err }, 'identity provider: the connector registry could not apply idp.config'));
    }
    return registry;
  }
  return {
    list: () => current().list().map(({ id, name, type }) => ({ id, name, type })),
    get: (id) => current().get(id)?.connector,
    close: () => registry.close(),
  };
}
