/**
 * `idp.config` of svc-cm: the connectors of the bundled identity provider. Each connector is
 * validated on its own (a bad one is left out, keeping its last good version by id).
 * `redirectURI` is always an error: svc sets the callback itself (`<url>/api/idp/callback`).
 */
import { z } from 'zod';
import type { ScopedSink } from '../config/problems.js';
import { resolveAllReferences, type SecretLookup } from '../config/secret-ref.js';
import { parseYamlValue } from '../config/yaml-value.js';
import { parseWith } from '../config/zod-problems.js';

export const CONNECTOR_TYPES = ['ldap', 'saml', 'github', 'gitlab', 'oidc'] as const;
export type ConnectorType = (typeof CONNECTOR_TYPES)[number];

// Connectors talk to these (or send browsers there): http(s) only, never javascript: or file:.
const url = z.string().refine((v) => URL.canParse(v) && /^https?:$/.test(new URL(v).protocol), 'not an http(s) URL');

const oauthCommon = {
  clientID: z.string().min(1),
  clientSecret: z.string().min(1),
  scopes: z.array(z.string()).optional(),
};

/** Per type the keys svc knows; LDAP and SAML keep Dex's names and are checked by their connector. */
const configSchemas: Readonly<Record<ConnectorType, z.ZodType>> = {
  github: z.strictObject({
    ...oauthCommon,
    orgs: z.array(z.strictObject({ name: z.string().min(1), teams: z.array(z.string()).optional() })).optional(),
    hostName: z.string().min(1).optional(),
    rootCA: z.string().optional(),
    loadAllGroups: z.boolean().optional(),
    teamNameField: z.enum(['name', 'slug', 'both']).optional(),
    useLoginAsID: z.boolean().optional(),
  }),
  gitlab: z.strictObject({
    ...oauthCommon,
    baseURL: url.optional(),
    groups: z.array(z.string()).optional(),
    useLoginAsID: z.boolean().optional(),
  }),
  oidc: z.strictObject({
    ...oauthCommon,
    issuer: url,
    insecureEnableGroups: z.boolean().optional(),
    getUserInfo: z.boolean().optional(),
    insecureSkipEmailVerified: z.boolean().optional(),
    userIDKey: z.string().optional(),
    userNameKey: z.string().optional(),
  }),
  ldap: z.record(z.string(), z.unknown()),
  saml: z.record(z.string(), z.unknown()),
};

export interface ConnectorConfig {
  readonly type: ConnectorType;
  readonly id: string;
  readonly name: string;
  readonly config: Readonly<Record<string, unknown>>;
}

export interface IdpConfig {
  readonly connectors: readonly ConnectorConfig[];
}

const entrySchema = z.strictObject({
  type: z.enum(CONNECTOR_TYPES),
  id: z.string().regex(/^[a-z0-9][a-z0-9_-]*$/, 'lower-case letters, digits, "-" and "_" only'),
  name: z.string().min(1),
  config: z.record(z.string(), z.unknown()),
});

/** `sink` is scoped at `svc-cm: idp.config`. */
export function parseIdpConfig(text: string | undefined, secrets: SecretLookup, sink: ScopedSink, previous?: IdpConfig): IdpConfig | undefined {
  if (text === undefined || text.trim() === '') return undefined;
  const yaml = parseYamlValue(text, sink);
  if (!yaml.ok) return previous;
  const doc = yaml.value as { connectors?: unknown } | null;
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
    sink.add([], 'must be a map with the key connectors');
    return previous;
  }
  for (const key of Object.keys(doc)) if (key !== 'connectors') sink.add([key], 'unknown key');
  if (!Array.isArray(doc.connectors)) {
    sink.add(['connectors'], 'must be a list');
    return previous;
  }
  const connectors: ConnectorConfig[] = [];
  doc.connectors.forEach((raw: unknown, index) => {
    const at = sink.at('connectors', index);
    const parsed = parseConnector(raw, secrets, at);
    const id = (raw as { id?: unknown } | null)?.id;
    const config = parsed ?? previous?.connectors.find((c) => c.id === id);
    if (config === undefined) return;
    if (connectors.some((c) => c.id === config.id)) {
      at.add(['id'], `'${config.id}' is used twice; the first one is used`);
      return;
    }
    connectors.push(config);
  });
  return { connectors };
}

function parseConnector(raw: unknown, secrets: SecretLookup, at: ScopedSink): ConnectorConfig | undefined {
  const before = at.count;
  const config = (raw as { config?: unknown } | null)?.config;
  if (typeof config === 'object' && config !== null && 'redirectURI' in config) {
    at.add(['config', 'redirectURI'], 'must not be set: svc sets the callback URL itself');
  }
  const entry = parseWith(entrySchema, raw, at);
  if (entry === undefined) return undefined;
  const resolved = resolveAllReferences(entry.config, secrets, at.at('config'));
  if (resolved === undefined) return undefined;
  const { redirectURI: _ignored, ...rest } = resolved as Record<string, unknown>;
  const checked = parseWith(configSchemas[entry.type], rest, at.at('config'));
  if (checked === undefined || at.count !== before) return undefined;
  return { type: entry.type, id: entry.id, name: entry.name, config: checked as Record<string, unknown> };
}
