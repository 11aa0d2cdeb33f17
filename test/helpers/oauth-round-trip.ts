/**
 * A browser's part of an OAuth2 login, for connector tests without svc's HTTP layer: begin() at
 * the connector, follow its redirect to the (fake) upstream's authorize endpoint, which answers
 * with a redirect back to the callback URL, and hand that callback's query to complete().
 */
import { randomBytes } from 'node:crypto';
import type { Connector, Identity, LoginContext } from '../../connectors/connector.js';
import { createTlsFetch } from '../../src/lib/tls-fetch.js';

/** The callback query the upstream's authorize endpoint sent the browser back with. */
export async function authorizeAsBrowser(authorizeUrl: string, callbackUrl: string, caPem: string): Promise<URLSearchParams> {
  const tls = createTlsFetch({ rootCAs: [caPem] });
  try {
    const res = await tls.fetch(authorizeUrl, { redirect: 'manual' });
    await res.arrayBuffer();
    const location = res.headers.get('location');
    if (location === null || !location.startsWith(callbackUrl)) throw new Error(`the upstream did not send the browser back (HTTP ${res.status}, location ${String(location)})`);
    return new URL(location).searchParams;
  } finally {
    await tls.close();
  }
}

export function browserConnector(connector: Connector): Connector & { kind: 'browser' } {
  if (connector.kind !== 'browser') throw new Error('expected a browser connector');
  return connector;
}

/**
 * A whole login. When the authorize URL is not on `upstreamHost` (the upstream moved to a dead
 * port), the browser could not have got a code: it comes back with one svc never issued, so the
 * connector's own calls meet the dead upstream.
 */
export async function roundTrip(connector: Connector, ctx: LoginContext, upstream: { host: string; caPem: string }, mutate?: (url: URL) => void): Promise<Identity> {
  const browser = browserConnector(connector);
  const state = randomBytes(16).toString('base64url');
  const start = await browser.begin(state, ctx);
  if (start.via !== 'redirect') throw new Error('expected a redirect');
  const url = new URL(start.url);
  mutate?.(url);
  const params = url.host === upstream.host
    ? await authorizeAsBrowser(url.href, ctx.callbackUrl, upstream.caPem)
    : new URLSearchParams({ code: 'never-issued', state });
  if (params.get('state') !== state) throw new Error('the state did not come back');
  return browser.complete(params, start.saved, ctx);
}
