/**
 * What the authorization request and the token requests carry, decided from the config and the
 * provider's discovery document: the scopes, the PKCE method, and how the client authenticates.
 */
import type { ServerMetadata } from 'openid-client';
import type { OidcConnectorConfig } from './config.js';

/** Hosts that refuse the client secret in a Basic header (Dex's list, dexidp/dex#859). */
const BASIC_AUTH_BROKEN = ['okta.com', 'oktapreview.com'];

const listed = (metadata: ServerMetadata, key: string): readonly unknown[] | undefined => {
  const value = metadata[key];
  return Array.isArray(value) ? value : undefined;
};

/**
 * `openid`, the configured scopes, and `offline_access` when the client asked for a refresh
 * token and the provider lists that scope (one that does not list it may still issue refresh
 * tokens of its own accord, as LemonLDAP::NG does for its online sessions).
 */
export function scopeFor(config: OidcConnectorConfig, metadata: ServerMetadata, offline: boolean): string {
  const scopes = new Set(['openid', ...config.scopes]);
  if (offline && listed(metadata, 'scopes_supported')?.includes('offline_access') === true) scopes.add('offline_access');
  return [...scopes].join(' ');
}

/**
 * `pkceChallenge` when set; otherwise S256, unless the provider lists its methods without S256
 * and with plain. PKCE is sent even to a provider that does not advertise it (an unknown
 * parameter is ignored, RFC 6749 §3.1), where Dex sends none.
 */
export function pkceMethodFor(config: OidcConnectorConfig, metadata: ServerMetadata): 'S256' | 'plain' {
  if (config.pkceChallenge !== undefined) return config.pkceChallenge;
  const methods = listed(metadata, 'code_challenge_methods_supported');
  return methods !== undefined && !methods.includes('S256') && methods.includes('plain') ? 'plain' : 'S256';
}

/**
 * Whether the client secret goes in the token request's body: `basicAuthUnsupported` when set,
 * yes for hosts known to refuse the Basic header or a provider that lists only
 * client_secret_post, and otherwise undefined: the connector tries Basic first and moves to the
 * body if the provider refuses it (golang/oauth2's auto-detection, which Dex relies on).
 */
export function secretInBodyFor(config: OidcConnectorConfig, metadata: ServerMetadata): boolean | undefined {
  if (config.basicAuthUnsupported !== undefined) return config.basicAuthUnsupported;
  const host = new URL(config.issuer).hostname;
  if (BASIC_AUTH_BROKEN.some((broken) => host === broken || host.endsWith(`.${broken}`))) return true;
  const methods = listed(metadata, 'token_endpoint_auth_methods_supported');
  if (methods !== undefined && !methods.includes('client_secret_basic') && methods.includes('client_secret_post')) return true;
  return undefined;
}
