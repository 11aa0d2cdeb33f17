/**
 * `extension.config` of svc-cm: a YAML list of extensions, each validated on its own so a bad
 * entry is reported with its index and key and the good ones keep working. A bad entry keeps
 * its last good version (by name) when it had one, except that `enabled: false` is honoured even
 * in a bad entry: switching an extension off in a hurry must not fail open because of a typo
 * elsewhere in the entry.
 */
import { z } from 'zod';
import { parseDuration } from '../lib/duration.js';
import type { ScopedSink } from '../config/problems.js';
import { resolveForChecking, type SecretLookup } from '../config/secret-ref.js';
import { parseYamlValue } from '../config/yaml-value.js';
import { parseWith } from '../config/zod-problems.js';

export const DEFAULT_IDLE_CONN_TIMEOUT_MS = 60_000;
/**
 * Sent with every extension response unless the entry says otherwise: the backend's pages run
 * in an opaque origin without script, so a compromised backend cannot read svc's cookies-bound
 * API or the other extensions with the user's session. A backend's own policy is sent too, and
 * browsers enforce both, so it can only narrow ours.
 */
export const DEFAULT_CONTENT_SECURITY_POLICY = 'sandbox';

export interface BackendTls {
  /** PEM of extra CAs trusted beside the system roots. */
  readonly caData?: string;
  /** PEM client certificate and key for mutual TLS. */
  readonly certData?: string;
  readonly keyData?: string;
  /** Name checked against the backend certificate when it differs from the URL's host. */
  readonly serverName?: string;
}

export interface BackendService {
  readonly url: string;
  readonly clusterName?: string;
  readonly tls?: BackendTls;
}

/** `backend.rateLimit`: a token bucket per caller and extension (rate-limit.ts). */
export interface RateLimit {
  readonly requestsPerSecond: number;
  readonly burst: number;
}

/** Bounds of backend.rateLimit: past them a value is a typo, not a limit. */
export const MAX_REQUESTS_PER_SECOND = 1_000_000;
export const MAX_BURST = 1_000_000;

export interface ExtensionConfig {
  readonly name: string;
  /** Absent: no limit. */
  readonly rateLimit?: RateLimit;
  readonly enabled: boolean;
  readonly idleConnTimeoutMs: number;
  readonly services: readonly BackendService[];
  /** The Content-Security-Policy svc adds to responses; undefined when the entry turned it off. */
  readonly contentSecurityPolicy: string | undefined;
  /** `backend.identityAssertion: true`: send the backend a signed Svc-Identity-Assertion (identity-assertion.ts); absent when off (the default). */
  readonly identityAssertion?: true;
}

const EXTENSION_NAME = /^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$/;

const httpUrl = z.string().refine((value) => {
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '' && url.search === '' && url.hash === '';
  } catch {
    return false;
  }
}, 'not a URL (want http:// or https:// with a host, without query or fragment)');

const pem = (what: string) => z.string().refine((v) => v.includes('-----BEGIN '), `not PEM text (${what})`);

const tlsSchema = z.strictObject({
  caData: pem('a CA certificate').optional(),
  certData: pem('a client certificate').optional(),
  keyData: pem('a private key').optional(),
  serverName: z.string().min(1).optional(),
}).refine((tls) => (tls.certData === undefined) === (tls.keyData === undefined), 'certData and keyData go together');

const serviceSchema = z.strictObject({
  url: httpUrl,
  clusterName: z.string().min(1).optional(),
  tls: tlsSchema.optional(),
});

// Printable ASCII without control characters: the value goes into a response header as is.
const policyText = z.string().regex(/^[\x20-\x7e]*$/, 'printable ASCII only').refine((v) => v.trim() !== '', 'must not be empty (false turns it off)');

const durationText = z.string().refine((v) => parseDuration(v) !== undefined && parseDuration(v)! > 0, 'not a duration (for example 30s, 2m)');

const rateLimitSchema = z.strictObject({
  requestsPerSecond: z.number().positive('must be above 0').max(MAX_REQUESTS_PER_SECOND, `at most ${MAX_REQUESTS_PER_SECOND}`),
  burst: z.number().int('must be a whole number').min(1, 'at least 1').max(MAX_BURST, `at most ${MAX_BURST}`),
});

const extensionSchema = z.strictObject({
  name: z.string().regex(EXTENSION_NAME, 'letters, digits, ".", "_" and "-" only'),
  enabled: z.boolean(),
  contentSecurityPolicy: z.union([z.literal(false), policyText]).optional(),
  backend: z.strictObject({
    idleConnTimeout: durationText.optional(),
    identityAssertion: z.boolean().optional(),
    rateLimit: rateLimitSchema.optional(),
    services: z.array(serviceSchema).min(1, 'at least one service is needed'),
  }),
}).superRefine((ext, ctx) => {
  const services = ext.backend.services;
  if (services.length > 1) {
    const seen = new Set<string>();
    services.forEach((service, i) => {
      if (service.clusterName === undefined) {
        ctx.addIssue({ code: 'custom', path: ['backend', 'services', i, 'clusterName'], message: 'is required when there are several services' });
      } else if (seen.has(service.clusterName)) {
        ctx.addIssue({ code: 'custom', path: ['backend', 'services', i, 'clusterName'], message: `'${service.clusterName}' is used twice` });
      } else seen.add(service.clusterName);
    });
  }
});

type RawExtension = z.infer<typeof extensionSchema>;

function toConfig(raw: RawExtension): ExtensionConfig {
  return {
    name: raw.name,
    enabled: raw.enabled,
    idleConnTimeoutMs: raw.backend.idleConnTimeout === undefined ? DEFAULT_IDLE_CONN_TIMEOUT_MS : parseDuration(raw.backend.idleConnTimeout)!,
    services: raw.backend.services.map((s) => ({
      url: s.url,
      ...(s.clusterName !== undefined ? { clusterName: s.clusterName } : {}),
      ...(s.tls !== undefined ? { tls: stripUndefined(s.tls) } : {}),
    })),
    contentSecurityPolicy: raw.contentSecurityPolicy === false ? undefined : (raw.contentSecurityPolicy?.trim() ?? DEFAULT_CONTENT_SECURITY_POLICY),
    ...(raw.backend.identityAssertion === true ? { identityAssertion: true } : {}),
    ...(raw.backend.rateLimit !== undefined ? { rateLimit: { requestsPerSecond: raw.backend.rateLimit.requestsPerSecond, burst: raw.backend.rateLimit.burst } } : {}),
  };
}

/** zod gives `key?: T | undefined`; the config types promise a key is absent rather than undefined. */
function stripUndefined<T extends object>(value: T): { [K in keyof T]: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as { [K in keyof T]: Exclude<T[K], undefined> };
}

/** What stands for an invalid entry: its last good version, switched off when the entry says so. */
function fallbackFor(entry: unknown, previous: readonly ExtensionConfig[]): ExtensionConfig | undefined {
  const raw = (typeof entry === 'object' && entry !== null ? entry : {}) as { name?: unknown; enabled?: unknown };
  if (typeof raw.name !== 'string') return undefined;
  const name = raw.name;
  const last = previous.find((p) => p.name === name);
  if (raw.enabled !== false) return last;
  if (last !== undefined) return { ...last, enabled: false };
  // No good version yet: a disabled stub (no services), so the 404 says "not enabled".
  return EXTENSION_NAME.test(name) ? { name, enabled: false, idleConnTimeoutMs: DEFAULT_IDLE_CONN_TIMEOUT_MS, services: [], contentSecurityPolicy: DEFAULT_CONTENT_SECURITY_POLICY } : undefined;
}

/**
 * Parses the key's text. `sink` is scoped at `svc-cm: extension.config`. When the YAML does
 * not parse at all, the previous list stays whole.
 */
export function parseExtensionConfig(
  text: string | undefined,
  secrets: SecretLookup,
  sink: ScopedSink,
  previous: readonly ExtensionConfig[] = [],
): readonly ExtensionConfig[] {
  if (text === undefined || text.trim() === '') return [];
  // parseYamlValue never repeats the library's message, which may quote the text: inline keyData.
  const parsed = parseYamlValue(text, sink);
  if (!parsed.ok) return previous;
  const doc = parsed.value;
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
    sink.add([], 'must be a map with the key extensions');
    return previous;
  }
  const { extensions, ...rest } = doc as Record<string, unknown>;
  for (const key of Object.keys(rest)) sink.add([key], 'unknown key');
  if (extensions === undefined || extensions === null) return [];
  if (!Array.isArray(extensions)) {
    sink.add(['extensions'], 'must be a list');
    return previous;
  }
  const out: ExtensionConfig[] = [];
  const names = new Set<string>();
  extensions.forEach((entry: unknown, index) => {
    const at = sink.at('extensions', index);
    const { value: resolved, unresolved } = resolveForChecking(entry, secrets, at);
    const checked = parseWith(extensionSchema, resolved, at, unresolved);
    const parsed = unresolved.length === 0 ? checked : undefined;
    if (parsed !== undefined && names.has(parsed.name)) {
      at.add(['name'], `'${parsed.name}' is defined twice; the first one is used`);
      return;
    }
    const config = parsed !== undefined ? toConfig(parsed) : fallbackFor(entry, previous);
    if (config === undefined || names.has(config.name)) return;
    // A refused switch that turns something off: say which state stays (config/disabling-switches.ts).
    const enabled = (entry as { enabled?: unknown } | null)?.enabled;
    if (parsed === undefined && typeof enabled !== 'boolean') at.add(['enabled'], `extension '${config.name}' stays ${config.enabled ? 'enabled' : 'disabled'} (its last good version) until this is fixed`);
    names.add(config.name);
    out.push(config);
  });
  return out;
}
