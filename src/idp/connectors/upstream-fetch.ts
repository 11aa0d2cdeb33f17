/**
 * What a connector gets to reach its upstream over HTTP (ConnectorDeps.upstreamFetch): fetch under
 * the one TLS policy (system roots plus the connector's rootCA, or no verification under
 * `oidc.tls.insecure.skip.verify`), whose failures are logged naming the connector and the host,
 * and whose connection pools are closed with the connector.
 */
import type { Logger } from 'pino';
import type { Connector, ConnectorDeps, ConnectorFactory } from '../../../connectors/connector.js';
import { createTlsFetch, describeFailure, isCertificateError, type TlsFetch } from '../../lib/tls-fetch.js';
import { inSpan, SpanKind, tracingOn } from '../../tracing/spans.js';

export interface UpstreamFetches {
  upstreamFetch(rootCAs?: readonly string[]): typeof globalThis.fetch;
  /** Closes every pool handed out. */
  close(): Promise<void>;
}

export function upstreamFetches(log: Logger, insecureSkipVerify: boolean): UpstreamFetches {
  const pools: TlsFetch[] = [];
  return {
    upstreamFetch(rootCAs = []) {
      if (insecureSkipVerify) log.warn('oidc.tls.insecure.skip.verify is true: this connector does NOT verify its upstream\'s certificate');
      const tls = createTlsFetch({ rootCAs, insecureSkipVerify });
      pools.push(tls);
      return (async (input: Parameters<typeof globalThis.fetch>[0], init?: RequestInit) => {
        try {
          return await upstreamSpan(input, init, () => tls.fetch(input, init));
        } catch (err: unknown) {
          const host = hostOf(input);
          if (isCertificateError(err)) log.error({ host, reason: describeFailure(err) }, `the certificate of ${host} is not trusted: give its CA as rootCA`);
          else log.warn({ host, reason: describeFailure(err) }, `${host} cannot be reached`);
          throw err;
        }
      }) as typeof globalThis.fetch;
    },
    async close() {
      await Promise.all(pools.splice(0).map((p) => p.close()));
    },
  };
}

/**
 * Opens a connector with its upstream fetch under the TLS policy, and makes its close also close
 * the pools that fetch opened: how the registry's connectors are opened, and the connector suite's.
 */
export function openWithUpstreamFetches(factory: ConnectorFactory, deps: Omit<ConnectorDeps, 'upstreamFetch'>, insecureSkipVerify: boolean): Connector {
  const fetches = upstreamFetches(deps.log, insecureSkipVerify);
  const connector = factory({ ...deps, upstreamFetch: (rootCAs) => fetches.upstreamFetch(rootCAs) });
  const closeConnector = connector.close?.bind(connector);
  return Object.assign(connector, {
    async close() {
      await closeConnector?.();
      await fetches.close();
    },
  });
}

/**
 * A connector's call to its upstream (token, userinfo, keys, discovery) as an HTTP client span
 * named after the method; its attributes are the host, port, path and status, never the query,
 * a header or the body (codes, secrets and tokens travel there).
 */
async function upstreamSpan(input: Parameters<typeof globalThis.fetch>[0], init: RequestInit | undefined, send: () => Promise<Response>): Promise<Response> {
  if (!tracingOn()) return send();
  const method = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase();
  const url = urlOf(input);
  return inSpan(method, {
    'http.request.method': method,
    ...(url !== undefined ? { 'server.address': url.hostname, 'server.port': Number(url.port || (url.protocol === 'https:' ? 443 : 80)), 'url.path': url.pathname } : {}),
  }, async (span) => {
    const response = await send();
    span.setAttribute('http.response.status_code', response.status);
    return response;
  }, SpanKind.CLIENT);
}

function urlOf(input: Parameters<typeof globalThis.fetch>[0]): URL | undefined {
  try {
    return new URL(input instanceof Request ? input.url : String(input));
  } catch {
    return undefined;
  }
}

function hostOf(input: Parameters<typeof globalThis.fetch>[0]): string {
  try {
    return new URL(input instanceof Request ? input.url : String(input)).host;
  } catch {
    return String(input);
  }
}
