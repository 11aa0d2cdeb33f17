/**
 * Which identity provider a server's SSO login goes to, and its OIDC discovery. The server's
 * public settings (`GET /api/v1/settings`) say it: an external provider (`oidcConfig`) with its
 * issuer and `cliClientID ?? clientID`, else the bundled one at `<server>/api/idp` with the
 * static public client `svc-cli` when it has connectors. Both paths then run the same code.
 */
import * as oidc from 'openid-client';
import type { ApiClient } from '../api-client.js';
import { CliError } from '../errors.js';
import { providerFetch, type ProviderFetchOptions } from './provider-fetch.js';

/** The bundled provider's client for the CLI (src/idp/clients.ts, kept apart: no import from the server). */
export const BUNDLED_CLI_CLIENT_ID = 'svc-cli';
/** What the CLI asks the bundled provider for; offline_access brings the refresh token. */
export const BUNDLED_SCOPES = 'openid profile email groups offline_access';

export interface SsoProvider {
  readonly issuer: string;
  readonly clientId: string;
  readonly scope: string;
}

interface SettingsView {
  readonly oidcConfig?: { readonly issuer?: unknown; readonly clientID?: unknown; readonly cliClientID?: unknown; readonly scopes?: unknown };
  readonly idpConnectors?: readonly unknown[];
}

/** The provider the server announces; a one-line error when it has none. */
export async function ssoProvider(api: ApiClient): Promise<SsoProvider> {
  const settings = await api.request<SettingsView>('GET', '/api/v1/settings');
  const external = settings.oidcConfig;
  if (external !== undefined && typeof external.issuer === 'string') {
    const clientId = stringOr(external.cliClientID, stringOr(external.clientID, ''));
    if (clientId === '') throw new CliError(`${api.server} announces an SSO provider without a client ID`);
    return { issuer: external.issuer, clientId, scope: externalScope(external.scopes) };
  }
  if ((settings.idpConnectors ?? []).length > 0) {
    return { issuer: `${api.server}/api/idp`, clientId: BUNDLED_CLI_CLIENT_ID, scope: BUNDLED_SCOPES };
  }
  throw new CliError(`${api.server} offers no single sign-on; log in with --username and --password`);
}

/** The provider's discovery document, as an openid-client configuration for a public client. */
export async function discoverProvider(provider: SsoProvider, options: ProviderFetchOptions): Promise<oidc.Configuration> {
  const fetchFn = providerFetch(options);
  const http = new URL(provider.issuer).protocol === 'http:';
  try {
    return await oidc.discovery(new URL(provider.issuer), provider.clientId, undefined, oidc.None(), {
      // A plain-http issuer is what the server itself announces (local setups); DESIGN §7 allows it.
      ...(http ? { execute: [oidc.allowInsecureRequests] } : {}),
      ...(fetchFn !== undefined ? { [oidc.customFetch]: fetchFn } : {}),
    });
  } catch (err: unknown) {
    throw new CliError(`cannot discover the identity provider at ${provider.issuer}: ${providerReason(err)}`, { cause: err });
  }
}

/** A provider's error as a short reason: its `error` code and description, else the message. */
export function providerReason(err: unknown): string {
  if (err instanceof oidc.ResponseBodyError || err instanceof oidc.AuthorizationResponseError) {
    return err.error_description !== undefined ? `${err.error} (${err.error_description})` : err.error;
  }
  if (!(err instanceof Error)) return String(err);
  if (err.cause instanceof Error) return `${err.message}: ${err.cause.message}`;
  // openid-client's "unexpected HTTP response status code" carries the answer itself.
  if (err.cause instanceof Response) return `${err.message}: HTTP ${err.cause.status}`;
  return err.message;
}

function externalScope(scopes: unknown): string {
  const list = Array.isArray(scopes) ? scopes.filter((s): s is string => typeof s === 'string') : [];
  const wanted = new Set(['openid', ...list, 'offline_access']);
  return [...wanted].join(' ');
}

function stringOr(value: unknown, fallback: string): string {
  return typeof value === 'string' && value !== '' ? value : fallback;
}
