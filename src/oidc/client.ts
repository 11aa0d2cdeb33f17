/**
 * The connection to one provider: an undici Agent of its own (system roots plus the configured
 * `rootCA`, or no verification at all under the skip switch), used by discovery, the code
 * exchange, refresh, userinfo and the JWKS fetch alike. Discovery is retried on the next use
 * when it failed, so a provider down at svc's start does not need a restart.
 */
import * as client from 'openid-client';
import { rootCertificates } from 'node:tls';
import type { Logger } from 'pino';
import { Agent, fetch as undiciFetch } from 'undici';
import { Unavailable } from '../errors.js';
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

export function createProviderClient(provider: SsoProvider): ProviderClient {
  const agent = new Agent({
    connect: provider.tls.insecureSkipVerify
      ? { rejectUnauthorized: false }
      // `ca` replaces the default roots: add the configured one to them, as Dex does.
      : { ca: provider.tls.rootCA === undefined ? undefined : [...rootCertificates, provider.tls.rootCA] },
  });
  const fetchImpl: FetchImpl = (url, init) => undiciFetch(url, { ...(init as object), dispatcher: agent }) as unknown as Promise<Response>;
  let discovered: Promise<client.Configuration> | undefined;

  async function discover(): Promise<client.Configuration> {
    const auth = provider.clientSecret === undefined ? client.None() : client.ClientSecretBasic(provider.clientSecret);
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
    close: () => agent.close(),
  };
}

/** The innermost cause's code and message: a certificate error names itself (UNABLE_TO_VERIFY_LEAF_SIGNATURE). */
export function describeFailure(err: unknown): string {
  let cause: unknown = err;
  for (let i = 0; i < 5 && cause instanceof Error && cause.cause !== undefined; i++) cause = cause.cause;
  if (!(cause instanceof Error)) return String(cause);
  const code = (cause as { code?: unknown }).code;
  const certificate = typeof code === 'string' && /CERT|SELF_SIGNED|UNABLE_TO_VERIFY/.test(code);
  return `${certificate ? 'certificate verification failed: ' : ''}${typeof code === 'string' ? `${code}: ` : ''}${cause.message}`;
}
