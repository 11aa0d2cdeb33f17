/**
 * The fetch openid-client uses towards the identity provider: as the API client's, so
 * `--insecure` and a test's injected fetch behave the same for the provider as for svc.
 */
import type * as oidc from 'openid-client';
import { insecureFetch, type FetchLike } from '../api-client.js';

export interface ProviderFetchOptions {
  readonly insecure: boolean;
  readonly fetch?: FetchLike;
}

/** undefined: openid-client's default (the global fetch). */
export function providerFetch(options: ProviderFetchOptions): oidc.CustomFetch | undefined {
  const chosen = options.fetch ?? (options.insecure ? insecureFetch() : undefined);
  if (chosen === undefined) return undefined;
  return (url, init) => chosen(url, init as RequestInit);
}
