/**
 * The connector types svc knows, by name, and the registry of live connectors.
 *
 * - `CONNECTOR_TYPES` and `parseConnectorConfig`: the parse side, used by `idp.config` parsing
 *   (src/idp/connectors/config.ts) and so by `svc-server validate`. It opens nothing and loads no connector
 *   library (ldapts, @node-saml/node-saml): test/connectors/parse-path.test.ts holds it to that.
 * - `ConnectorRegistry`: the live side. It builds a connector from each parsed entry whenever the
 *   configuration changes, keeps the last good connector of an id whose build fails, and closes
 *   the ones it replaces or drops. Everything it needs comes in `deps`; there is no module state.
 */
import type { Logger } from 'pino';
import type { Connector, ConnectorFactory, ConnectorType, ParseInput } from './connector.js';
import { isMap, REDIRECT_URI_PROBLEM } from './config-schema.js';
import { github } from './github/index.js';
import { gitlab } from './gitlab/index.js';
import { google } from './google/index.js';
import { ldap } from './ldap/index.js';
import { microsoft } from './microsoft/index.js';
import { oidc } from './oidc/index.js';
import { saml } from './saml/index.js';

export type ConnectorTypes = ReadonlyMap<string, ConnectorType>;

/** A name -> type table from a list of types (tests build their own with a fake type). */
export function connectorTypes(...types: readonly ConnectorType[]): ConnectorTypes {
  return new Map(types.map((type) => [type.type, type]));
}

/** Every type svc knows, in the order the docs list them. */
export const CONNECTOR_TYPES: ConnectorTypes = connectorTypes(
  ldap,
  saml,
  github,
  gitlab,
  oidc,
  microsoft,
  google,
);

/**
 * The factory for one connector's `config`, or undefined after reporting every problem to
 * `input.at` (scoped at `connectors[i].config`). `redirectURI` is refused here for every type,
 * whatever its own schema says: svc sets the callback URL itself.
 */
export function parseConnectorConfig(type: string, input: ParseInput, types: ConnectorTypes = CONNECTOR_TYPES): ConnectorFactory | undefined {
  const known = types.get(type);
  if (known === undefined) throw new Error(`unknown connector type '${type}': check the type before parsing its config`);
  if (!isMap(input.raw)) {
    input.at.add([], 'must be a map');
    return undefined;
  }
  const before = input.at.count;
  const { redirectURI, ...raw } = input.raw;
  if (redirectURI !== undefined) input.at.add(['redirectURI'], REDIRECT_URI_PROBLEM);
  const factory = known.parse({ ...input, raw });
  return input.at.count === before ? factory : undefined;
}

/** One connector entry of `idp.config`, checked: what the registry builds a connector from. */
export interface ParsedConnector {
  readonly type: string;
  readonly id: string;
  readonly name: string;
  readonly open: ConnectorFactory;
}

export interface LiveConnector {
  readonly id: string;
  readonly name: string;
  readonly type: string;
  readonly connector: Connector;
}

export interface ConnectorRegistryDeps {
  /**
   * Opens an entry with its ConnectorDeps (fetch under the TLS policy, the clock, a logger scoped
   * with the connector's type and id); may throw.
   */
  open(entry: ParsedConnector): Connector;
  readonly log: Logger;
}

interface Built extends LiveConnector {
  /** The entry this was built from: the same entry again (a last good one kept by parsing) is not rebuilt. */
  readonly entry: ParsedConnector;
}

export class ConnectorRegistry {
  private live = new Map<string, Built>();
  private closed = false;

  constructor(private readonly deps: ConnectorRegistryDeps) {}

  /**
   * Builds the connectors of `entries` (the parsed `idp.config`, in order) and puts them in
   * force at once, before returning; the promise is the closing of the ones replaced or no
   * longer listed. An entry whose build throws keeps the connector in force for its id, if any,
   * and is logged; the others apply.
   */
  update(entries: readonly ParsedConnector[]): Promise<void> {
    if (this.closed) return Promise.reject(new Error('the connector registry is closed'));
    const next = new Map<string, Built>();
    for (const entry of entries) {
      if (next.has(entry.id)) continue; // idp.config parsing reports a second entry with an id
      const current = this.live.get(entry.id);
      const built = current?.entry === entry ? current : this.build(entry, current);
      if (built !== undefined) next.set(entry.id, built);
    }
    const replaced = [...this.live.values()].filter((old) => next.get(old.id) !== old);
    this.live = next;
    return Promise.all(replaced.map((old) => this.closeOne(old))).then(() => undefined);
  }

  get(id: string): LiveConnector | undefined {
    return this.live.get(id);
  }

  /** The live connectors in the order of `idp.config`. */
  list(): readonly LiveConnector[] {
    return [...this.live.values()];
  }

  /** Closes every connector; the registry takes no update after this. */
  async close(): Promise<void> {
    this.closed = true;
    const all = [...this.live.values()];
    this.live = new Map();
    await Promise.all(all.map((old) => this.closeOne(old)));
  }

  private build(entry: ParsedConnector, current: Built | undefined): Built | undefined {
    try {
      const connector = this.deps.open(entry);
      return { id: entry.id, name: entry.name, type: entry.type, connector, entry };
    } catch (err: unknown) {
      const kept = current === undefined ? 'it is left out' : 'the previous one stays in force';
      this.deps.log.error({ err, connector: entry.id, type: entry.type }, `connector ${entry.id} could not be built; ${kept}`);
      return current;
    }
  }

  private async closeOne(old: Built): Promise<void> {
    try {
      await old.connector.close?.();
    } catch (err: unknown) {
      this.deps.log.warn({ err, connector: old.id, type: old.type }, `connector ${old.id} did not close cleanly`);
    }
  }
}
