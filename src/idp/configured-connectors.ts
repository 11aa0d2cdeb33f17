/**
 * A ConnectorSource over idp.config: each entry is built once by `build` (the connector
 * registry's) and rebuilt only when its entry changes, so connector changes apply without a
 * restart. An entry `build` cannot make (a type this build lacks) is left out and logged once.
 */
import type { Connector } from '../../connectors/connector.js';
import type { Logger } from 'pino';
import type { IdpConfig, ParsedConnector } from './config.js';
import type { ConnectorInfo, ConnectorSource } from './connector-source.js';

export type BuildConnector = (config: ParsedConnector) => Connector | undefined;

export function createConfiguredConnectors(config: () => IdpConfig | undefined, build: BuildConnector, log: Logger): ConnectorSource & { close(): Promise<void> } {
  const built = new Map<ParsedConnector, Connector | undefined>();
  function current(): Map<string, { info: ConnectorInfo; connector: Connector }> {
    const entries = config()?.connectors ?? [];
    for (const [entry, connector] of built) {
      if (!entries.includes(entry)) {
        built.delete(entry);
        connector?.close?.().catch((err: unknown) => log.warn({ err, connector: entry.id }, 'identity provider: closing a replaced connector failed'));
      }
    }
    const out = new Map<string, { info: ConnectorInfo; connector: Connector }>();
    for (const entry of entries) {
      if (!built.has(entry)) {
        const connector = build(entry);
        if (connector === undefined) log.warn({ connector: entry.id, type: entry.type }, 'identity provider: connector type not available in this build; left out');
        built.set(entry, connector);
      }
      const connector = built.get(entry);
      if (connector !== undefined) out.set(entry.id, { info: { id: entry.id, name: entry.name, type: entry.type }, connector });
    }
    return out;
  }
  return {
    list: () => [...current().values()].map((c) => c.info),
    get: (id) => current().get(id)?.connector,
    async close() {
      await Promise.all([...built.values()].map((c) => c?.close?.()));
      built.clear();
    },
  };
}
