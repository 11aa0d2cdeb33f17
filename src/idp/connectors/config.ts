/**
 * `idp.config` of svc-cm: the connectors of the bundled identity provider. This owns the envelope
 * (`connectors[]` with `type`, `id`, `name`, `config`; ids unique); each `config` belongs to its
 * type under connectors/ (connectors/registry.ts). Each connector is validated on its own: a bad
 * one is left out, keeping its last good version by id. `redirectURI` is always an error: svc sets
 * the callback itself (`<url>/api/idp/callback`). `staticClients`, the other applications that
 * may use the provider, are checked the same way by ./static-clients-config.ts.
 */
import { z } from 'zod';
import { isMap } from '../../../connectors/config-schema.js';
import type { ConnectorFactory } from '../../../connectors/connector.js';
import { CONNECTOR_TYPES, parseConnectorConfig, type ConnectorTypes, type ParsedConnector } from '../../../connectors/registry.js';
import { withClaimRules } from '../../claims/connector-rules.js';
import { parseClaimRules, withoutClaimRules } from '../../claims/rules-config.js';
import type { ScopedSink } from '../../config/problems.js';
import type { SecretLookup } from '../../config/secret-ref.js';
import { parseYamlValue } from '../../config/yaml-value.js';
import { parseWith } from '../../config/zod-problems.js';
import { parseStaticClients, type StaticClient } from '../static-clients-config.js';

export type { ParsedConnector } from '../../../connectors/registry.js';

export interface IdpConfig {
  readonly connectors: readonly ParsedConnector[];
  /** Other applications' clients (./static-clients-config.ts). */
  readonly staticClients: readonly StaticClient[];
}

function entrySchema(types: ConnectorTypes) {
  return z.strictObject({
    type: z.string().refine((type) => types.has(type), `not a connector type: one of ${[...types.keys()].join(', ')}`),
    id: z.string().regex(/^[a-z0-9][a-z0-9_-]*$/, 'lower-case letters, digits, "-" and "_" only'),
    name: z.string().min(1),
    // Checked by its type (parseConnectorConfig), with paths under config.
    config: z.unknown().optional(),
  });
}

/** `sink` is scoped at `svc-cm: idp.config`; `types` is every known type unless a test brings its own. */
export function parseIdpConfig(
  text: string | undefined,
  secrets: SecretLookup,
  sink: ScopedSink,
  previous?: IdpConfig,
  types: ConnectorTypes = CONNECTOR_TYPES,
): IdpConfig | undefined {
  if (text === undefined || text.trim() === '') return undefined;
  const yaml = parseYamlValue(text, sink);
  if (!yaml.ok) return previous;
  const doc = yaml.value as { connectors?: unknown; staticClients?: unknown } | null;
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
    sink.add([], 'must be a map with the keys connectors and staticClients');
    return previous;
  }
  for (const key of Object.keys(doc)) if (key !== 'connectors' && key !== 'staticClients') sink.add([key], 'unknown key');
  const staticClients = parseStaticClients(doc.staticClients, secrets, sink.at('staticClients'), previous?.staticClients);
  if (!Array.isArray(doc.connectors)) {
    sink.add(['connectors'], 'must be a list');
    return previous;
  }
  const connectors: ParsedConnector[] = [];
  const schema = entrySchema(types);
  doc.connectors.forEach((raw: unknown, index) => {
    const at = sink.at('connectors', index);
    const parsed = parseConnector(raw, { schema, secrets, types }, at);
    const id = isMap(raw) ? raw['id'] : undefined;
    const connector = parsed ?? previous?.connectors.find((c) => c.id === id);
    if (connector === undefined) return;
    if (connectors.some((c) => c.id === connector.id)) {
      at.add(['id'], `'${connector.id}' is used twice; the first one is used`);
      return;
    }
    connectors.push(connector);
  });
  return { connectors, staticClients };
}

/** Every problem of the entry and of its config, in one pass; undefined when there is any. */
interface EntryContext {
  readonly schema: ReturnType<typeof entrySchema>;
  readonly secrets: SecretLookup;
  readonly types: ConnectorTypes;
}

function parseConnector(raw: unknown, { schema, secrets, types }: EntryContext, at: ScopedSink): ParsedConnector | undefined {
  if (!isMap(raw)) {
    at.add([], 'must be a map with type, id, name and config');
    return undefined;
  }
  const before = at.count;
  const entry = parseWith(schema, raw, at);
  const type = raw['type'];
  let open;
  if (typeof type === 'string' && types.has(type)) {
    if (raw['config'] === undefined) at.add(['config'], 'required');
    else open = parseConfig(type, raw['config'], { secrets, types }, at.at('config'));
  }
  if (entry === undefined || open === undefined || at.count !== before) return undefined;
  return { type: entry.type, id: entry.id, name: entry.name, open };
}

/**
 * A connector's `config`: the claim rules (src/claims/), which every type takes, apart from the
 * type's own keys; the factory's connectors hand out identities under the rules.
 */
function parseConfig(type: string, config: unknown, { secrets, types }: Omit<EntryContext, 'schema'>, at: ScopedSink): ConnectorFactory | undefined {
  if (!isMap(config)) return parseConnectorConfig(type, { raw: config, secrets, at }, types);
  const rules = parseClaimRules(config, at);
  const open = parseConnectorConfig(type, { raw: withoutClaimRules(config), secrets, at }, types);
  return open === undefined || rules === undefined ? undefined : withClaimRules(open, rules);
}
