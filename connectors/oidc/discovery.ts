/**
 * The upstream's discovery document (`<issuer>/.well-known/openid-configuration`), fetched by
 * svc itself rather than by openid-client's discovery(), for two reasons Dex has too: the
 * document's `issuer` may be the configured `issuerAlias` (Azure, Oracle), and
 * `providerDiscoveryOverrides` replace endpoints the document publishes. The issuer the ID tokens
 * are checked against is the one the document names.
 */
import type { ServerMetadata } from 'openid-client';
import type { OidcConnectorConfig } from './config.js';

/** Why discovery failed, for the log (never shown to the person logging in). */
export class DiscoveryFailed extends Error {
  override readonly name = 'DiscoveryFailed';
}

/** The endpoints a login needs; each must be an http(s) URL. */
const REQUIRED = ['authorization_endpoint', 'token_endpoint', 'jwks_uri'] as const;
/** A discovery document is a few kB; anything past this is not one. */
const MAX_DOCUMENT_BYTES = 256 * 1024;

export function discoveryUrl(issuer: string): string {
  return `${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
}

/** Trailing slashes aside, the issuer must be the configured one or its alias (go-oidc compares strictly; `https://x` and `https://x/` differ only in how people type them). */
function sameIssuer(a: string, b: string): boolean {
  return a.replace(/\/$/, '') === b.replace(/\/$/, '');
}

export async function discover(config: OidcConnectorConfig, fetchImpl: typeof globalThis.fetch, signal: AbortSignal): Promise<ServerMetadata> {
  const url = discoveryUrl(config.issuer);
  const res = await fetchImpl(url, { headers: { accept: 'application/json' }, signal });
  if (!res.ok) {
    await res.body?.cancel();
    throw new DiscoveryFailed(`${url} answered HTTP ${res.status}`);
  }
  const text = await res.text();
  if (text.length > MAX_DOCUMENT_BYTES) throw new DiscoveryFailed(`${url} answered ${text.length} bytes: not a discovery document`);
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new DiscoveryFailed(`${url} did not answer JSON`);
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new DiscoveryFailed(`${url} did not answer a JSON object`);
  const metadata = withOverrides(doc as Record<string, unknown>, config);
  const issuer = metadata['issuer'];
  if (typeof issuer !== 'string') throw new DiscoveryFailed(`${url} names no issuer`);
  const accepted = [config.issuer, ...(config.issuerAlias !== undefined ? [config.issuerAlias] : [])];
  if (!accepted.some((name) => sameIssuer(name, issuer))) {
    throw new DiscoveryFailed(`${url} names the issuer ${JSON.stringify(issuer)}, not ${accepted.map((a) => JSON.stringify(a)).join(' or ')}`);
  }
  for (const key of REQUIRED) {
    const value = metadata[key];
    if (typeof value !== 'string' || !URL.canParse(value) || !/^https?:$/.test(new URL(value).protocol)) {
      throw new DiscoveryFailed(`${url} has no usable ${key}`);
    }
  }
  return metadata as ServerMetadata;
}

function withOverrides(doc: Record<string, unknown>, config: OidcConnectorConfig): Record<string, unknown> {
  const o = config.providerDiscoveryOverrides;
  if (o === undefined) return doc;
  return {
    ...doc,
    ...(o.authURL !== undefined ? { authorization_endpoint: o.authURL } : {}),
    ...(o.tokenURL !== undefined ? { token_endpoint: o.tokenURL } : {}),
    ...(o.jwksURL !== undefined ? { jwks_uri: o.jwksURL } : {}),
    ...(o.userInfoURL !== undefined ? { userinfo_endpoint: o.userInfoURL } : {}),
    ...(o.deviceAuthURL !== undefined ? { device_authorization_endpoint: o.deviceAuthURL } : {}),
    ...(o.endSessionURL !== undefined ? { end_session_endpoint: o.endSessionURL } : {}),
  };
}
