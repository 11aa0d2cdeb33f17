/**
 * The connection to one provider: an undici Agent of its own (system roots plus the configured
 * `rootCA`, or no verification at all under the skip switch), used by discovery, the code
 * exchange, refresh, userinfo and the JWKS fetch alike. Discovery is retried on the next use
 * when it failed, so a provider down at svc's start does not need a restart.
 */
import * as client from 'openid-client';
import type { Logger } from 'pino';
import { Unavailable } from '../errors.js';
import { createTlsFetch, describeFailure } from '../lib/tls-fetch.js';
import type { SsoProvider } from './provider.js';

export type FetchImpl = (url: string, init: RequestInit) => Promise<Response>;

export interface ProviderClient {
  readonly provider: SsoProvider;
  readonly fetch: FetchImpl;
  /** The discovered configuration; Unavailable with the cause when the provider cannot be reached. */
  configuration(): Promise<client.Configuration>;
  close(): Promise<void>;
}

/** Warnings that are due at every start: the operator chose something unsafe. */
export function warnAboutProvider(provider: SsoProvider, log: Pick<Logger, 'warn'>): void {
  if (provider.tls.insecureSkipVerify) log.warn({ issuer: provider.issuer }, 'oidc.tls.insecure.skip.verify is true: the certificate of the OIDC provider is NOT verified');
  if (new URL(provider.issuer).protocol === 'http:') log.warn({ issuer: provider.issuer }, 'the OIDC issuer is plain http: tokens and codes travel unencrypted');
}

/**
 * client_secret_basic with the ID and secret escaped as Go's url.QueryEscape does (Argo CD's
 * oauth2 library): unreserved characters (`-_.~`) stay as they are. openid-client escapes them
 * too (RFC 6749 appendix B, strictly), and providers that do not form-decode the header, such
 * as LemonLDAP::NG, then refuse a secret with a `-` in it.
 */
export function secretBasic(clientID: string, clientSecret: string): client.ClientAuth {
  const credentials = Buffer.from(`${queryEscape(clientID)}:${queryEscape(clientSecret)}`).toString('base64');
  return (_as, _client, _body, headers) => headers.set('authorization', `Basic ${credentials}`);
}

function queryEscape(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`).replace(/%20/g, '+');
}

export function createProviderClient(provider: SsoProvider): ProviderClient {
  const tls = createTlsFetch({
    insecureSkipVerify: provider.tls.insecureSkipVerify,
    ...(provider.tls.rootCA !== undefined ? { rootCAs: [provider.tls.rootCA] } : {}),
  });
  const fetchImpl: FetchImpl = (url, init) => tls.fetch(url, init);
  let discovered: Promise<client.Configuration> | undefined;

  async function discover(): Promise<client.Configuration> {
    const auth = provider.clientSecret === undefined ? client.None() : secretBasic(provider.clientID, provider.clientSecret);
    const insecure = new URL(provider.issuer).protocol === 'http:';
    try {
      return await client.discovery(new URL(provider.issuer), provider.clientID, provider.clientSecret, auth, {
        [client.customFetch]: fetchImpl as client.CustomFetch,
        execute: insecure ? [client.allowInsecureRequests] : [],
      });
    } catch (err: unknown) {
      throw new Unavailable(`the OIDC provider ${provider.issuer} cannot be reached: ${describeFailure(err)}`, { cause: err });
    }
  }

  return {
    provider,
    fetch: fetchImpl,
    configuration() {
      discovered ??= discover();
      discovered.catch(() => { discovered = undefined; });
      return discovered;
    },
    close: () => tls.close(),
  };
}

