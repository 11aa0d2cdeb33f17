/**
 * `staticClients` of `idp.config`: other applications registered with the bundled identity
 * provider, in Dex's shape (`id`, `name`, `secret`, `redirectURIs`, `public`, `trustedPeers`,
 * `logoURL`, and Dex's newer `postLogoutRedirectURIs`), and `backchannelLogoutUri`: where svc's
 * provider sends an OIDC Back-Channel Logout token when the user's session there ends. Each entry is checked on its own, every
 * problem named by its key path; a bad entry keeps its last good version by id, as connectors do.
 *
 * - `secret` is a secret reference (`$<key>` of svc-secret or `$<secret>:<key>`), never the
 *   secret itself: the ConfigMap is readable by more people than the Secret.
 * - `trustedPeers` is refused when it lists any client: svc issues no cross-client tokens
 *   (docs/decisions.md), and a setting that silently did nothing would mislead.
 * - `introspection` is `own` (the default: a client introspects only the tokens issued to it) or
 *   `any` (a resource server for the other registered applications, RFC 7662 §4); a public
 *   client introspects nothing (it cannot authenticate, RFC 7662 §2.1), so `any` there is a
 *   problem rather than a setting that silently does nothing.
 */
import { z } from 'zod';
import type { ScopedSink } from '../config/problems.js';
import { isSecretReference, resolveSecretReference, type SecretLookup } from '../config/secret-ref.js';
import { parseWith, quoted } from '../config/zod-problems.js';
import { CLIENT_IDS } from './clients.js';

export interface StaticClient {
  readonly id: string;
  /** Shown on the login page; the id when the entry has no name. */
  readonly name: string;
  /** The resolved secret of a confidential client; undefined for a public one. */
  readonly secret?: string;
  readonly public: boolean;
  readonly redirectURIs: readonly string[];
  readonly postLogoutRedirectURIs: readonly string[];
  readonly logoURL?: string;
  /** OIDC Back-Channel Logout: the client's endpoint for logout tokens (with `sid`). */
  readonly backchannelLogoutUri?: string;
  /** Whose tokens it may introspect (RFC 7662): its own, or those of every registered application; absent: DEFAULT_INTROSPECTION. */
  readonly introspection?: IntrospectionReach;
}

export type IntrospectionReach = 'own' | 'any';
/** Off by default: a client learns nothing of another client's tokens unless its entry says so. */
export const DEFAULT_INTROSPECTION: IntrospectionReach = 'own';

/** At most this many static clients are served; each one is looked up on every request that names it. */
export const MAX_STATIC_CLIENTS = 200;
const MAX_URIS = 50;
const LOOPBACKS: ReadonlySet<string> = new Set(['127.0.0.1', '[::1]', 'localhost']);
/** Schemes oidc-provider refuses as redirect targets for any client. */
const FORBIDDEN_SCHEMES: ReadonlySet<string> = new Set(['javascript:', 'data:', 'file:', 'vbscript:', 'about:', 'blob:']);

const uriList = z.array(z.string()).max(MAX_URIS, `at most ${MAX_URIS} URIs`);

const entrySchema = z.strictObject({
  id: z.string().regex(/^[A-Za-z0-9._~-]{1,128}$/, 'letters, digits, ".", "_", "~" and "-" only, at most 128'),
  name: z.string().min(1).max(200).optional(),
  secret: z.string().optional(),
  public: z.boolean().optional(),
  redirectURIs: uriList.min(1, 'at least one redirect URI'),
  postLogoutRedirectURIs: uriList.optional(),
  trustedPeers: z.array(z.string()).optional(),
  logoURL: z.string().optional(),
  backchannelLogoutUri: z.string().optional(),
  introspection: z.enum(['own', 'any']).optional(),
});

type Entry = z.infer<typeof entrySchema>;

/** `raw` is the value of `staticClients` (absent: none); `at` is scoped at `staticClients`. */
export function parseStaticClients(
  raw: unknown, secrets: SecretLookup, at: ScopedSink, previous: readonly StaticClient[] = [],
): readonly StaticClient[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) {
    at.add([], 'must be a list');
    return previous;
  }
  if (raw.length > MAX_STATIC_CLIENTS) at.add([], `at most ${MAX_STATIC_CLIENTS} clients; the rest are left out`);
  const clients: StaticClient[] = [];
  raw.slice(0, MAX_STATIC_CLIENTS).forEach((item: unknown, index) => {
    const entryAt = at.at(index);
    const id = typeof item === 'object' && item !== null ? (item as { id?: unknown }).id : undefined;
    const client = parseEntry(item, secrets, entryAt) ?? previous.find((c) => c.id === id);
    if (client === undefined) return;
    if (clients.some((c) => c.id === client.id)) {
      entryAt.add(['id'], `'${client.id}' is used twice; the first one is used`);
      return;
    }
    clients.push(client);
  });
  return clients;
}

function parseEntry(raw: unknown, secrets: SecretLookup, at: ScopedSink): StaticClient | undefined {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    at.add([], 'must be a map with id, redirectURIs and secret or public: true');
    return undefined;
  }
  const before = at.count;
  const entry = parseWith(entrySchema, raw, at);
  if (entry === undefined) return undefined;
  if (CLIENT_IDS.includes(entry.id)) at.add(['id'], `'${entry.id}' is svc's own client; choose another id`);
  const isPublic = entry.public ?? false;
  entry.redirectURIs.forEach((uri, i) => checkRedirectUri(uri, isPublic, at, ['redirectURIs', i]));
  (entry.postLogoutRedirectURIs ?? []).forEach((uri, i) => checkRedirectUri(uri, isPublic, at, ['postLogoutRedirectURIs', i]));
  if ((entry.trustedPeers ?? []).length > 0) {
    at.add(['trustedPeers'], 'not supported: svc issues no tokens for one client to another (audience:server:client_id: scopes are dropped); register the other application as its own client');
  }
  if (entry.logoURL !== undefined) checkLogoUrl(entry.logoURL, at);
  if (entry.backchannelLogoutUri !== undefined) checkBackchannelUri(entry.backchannelLogoutUri, at);
  if (isPublic && entry.introspection === 'any') at.add(['introspection'], 'a public client cannot introspect tokens (it has no secret to authenticate with); remove introspection, or remove public: true');
  if (isPublic && at.count === before && !isNativeClient({ public: true, redirectURIs: entry.redirectURIs, postLogoutRedirectURIs: entry.postLogoutRedirectURIs ?? [] })
    && entry.redirectURIs.some((uri) => !/^https?:/i.test(uri))) {
    at.add(['redirectURIs'], 'custom-scheme URIs cannot be mixed with http URIs on other hosts than loopback, nor with https on loopback');
  }
  const secret = secretOf(entry, isPublic, secrets, at);
  if (at.count !== before) return undefined;
  return {
    id: entry.id,
    name: entry.name ?? entry.id,
    public: isPublic,
    redirectURIs: entry.redirectURIs,
    postLogoutRedirectURIs: entry.postLogoutRedirectURIs ?? [],
    introspection: entry.introspection ?? DEFAULT_INTROSPECTION,
    ...(secret !== undefined ? { secret } : {}),
    ...(entry.logoURL !== undefined ? { logoURL: entry.logoURL } : {}),
    ...(entry.backchannelLogoutUri !== undefined ? { backchannelLogoutUri: entry.backchannelLogoutUri } : {}),
  };
}

function secretOf(entry: Entry, isPublic: boolean, secrets: SecretLookup, at: ScopedSink): string | undefined {
  if (isPublic) {
    if (entry.secret !== undefined) at.add(['secret'], 'a public client has no secret: remove it, or remove public: true');
    return undefined;
  }
  if (entry.secret === undefined) {
    at.add(['secret'], 'required for a confidential client: a secret reference ($<key> of svc-secret or $<secret>:<key>), or public: true');
    return undefined;
  }
  // Never the value in the message: it is most likely the secret itself.
  if (!isSecretReference(entry.secret)) {
    at.add(['secret'], 'must be a secret reference ($<key> of svc-secret or $<secret>:<key>), not the secret itself');
    return undefined;
  }
  const value = resolveSecretReference(entry.secret, secrets, at, ['secret']);
  if (value === '') at.add(['secret'], 'references an empty value');
  return value === '' ? undefined : value;
}

/**
 * What oidc-provider would refuse, said with the key path: an absolute URI without a fragment;
 * a confidential client redirects to http(s) only. A public client may also use a custom scheme
 * (a native application) or a loopback address on any port, as svc-cli does.
 */
function checkRedirectUri(uri: string, isPublic: boolean, at: ScopedSink, path: (string | number)[]): void {
  const parsed = URL.parse(uri);
  const shown = quoted(uri);
  if (parsed === null) return at.add(path, `${shown} is not an absolute URI`);
  if (uri.includes('#')) return at.add(path, `${shown} must not have a fragment (#)`);
  if (FORBIDDEN_SCHEMES.has(parsed.protocol)) return at.add(path, `${shown}: the ${parsed.protocol.slice(0, -1)} scheme is not allowed`);
  const web = parsed.protocol === 'http:' || parsed.protocol === 'https:';
  if (!web && !isPublic) return at.add(path, `${shown}: a confidential client must use an http or https URI (custom schemes are for public clients)`);
  if (web && parsed.host === '') at.add(path, `${shown} has no host`);
}

/** An absolute http(s) URL: the login page loads it, and its origin is allowed for images there. */
function checkLogoUrl(uri: string, at: ScopedSink): void {
  const parsed = URL.parse(uri);
  if (parsed === null || (parsed.protocol !== 'https:' && parsed.protocol !== 'http:')) return at.add(['logoURL'], `${quoted(uri)} must be an absolute http or https URL`);
  if (parsed.username !== '' || parsed.password !== '') at.add(['logoURL'], 'must not carry credentials');
}

/** OIDC Back-Channel Logout 1.0 §2.2: an absolute http(s) URL, a query allowed, no fragment; no credentials in it. */
function checkBackchannelUri(uri: string, at: ScopedSink): void {
  const parsed = URL.parse(uri);
  const path = ['backchannelLogoutUri'];
  if (parsed === null || (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') || parsed.host === '') return at.add(path, `${quoted(uri)} must be an absolute http or https URL`);
  if (uri.includes('#')) return at.add(path, `${quoted(uri)} must not have a fragment (#)`);
  if (parsed.username !== '' || parsed.password !== '') at.add(path, 'must not carry credentials');
}

/**
 * oidc-provider's application type: `native` (loopback redirects on any port, custom schemes)
 * for a public client whose URIs all suit it; `web` otherwise.
 */
export function isNativeClient(client: Pick<StaticClient, 'public' | 'redirectURIs' | 'postLogoutRedirectURIs'>): boolean {
  if (!client.public) return false;
  return [...client.redirectURIs, ...client.postLogoutRedirectURIs].every((uri) => {
    const parsed = URL.parse(uri);
    if (parsed === null) return false;
    if (parsed.protocol === 'http:') return LOOPBACKS.has(parsed.hostname);
    if (parsed.protocol === 'https:') return !LOOPBACKS.has(parsed.hostname);
    return true;
  });
}
