/**
 * LemonLDAP::NG as an existing OIDC provider for svc: started once per test file by
 * scripts/peers/start-lemonldap-ng.sh over HTTPS with a certificate of a test CA, with its
 * packaged demo users (dwho/dwho in groups users and timelords, rtyler/rtyler in users and earthlings). Its
 * ID tokens carry no groups: they come only from its userinfo endpoint. And a login through its
 * portal: the login form (hidden url, token, skin) posted back to the authorize URL.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, fetch as undiciFetch } from 'undici';
import { freePort, startPeer, type Peer } from './peers.js';
import { SsoBrowser } from './sso-browser.js';
import type { TestCa } from './test-ca.js';

export const LLNG_CLIENT_ID = 'svc';
export const LLNG_CLIENT_SECRET = 'llng-client-secret-for-tests';

export interface Llng {
  /** With the trailing slash, as LemonLDAP::NG announces it. */
  readonly issuer: string;
  /** A browser that trusts the test CA for the portal. */
  browser(): SsoBrowser;
  stop(): Promise<void>;
}

export async function startLlng(ca: TestCa, redirectUris: readonly string[]): Promise<Llng> {
  const tlsDir = mkdtempSync(join(tmpdir(), 'svc-llng-tls-'));
  writeFileSync(join(tlsDir, 'cert.pem'), ca.certPem);
  writeFileSync(join(tlsDir, 'key.pem'), ca.keyPem, { mode: 0o600 });
  writeFileSync(join(tlsDir, 'ca.pem'), ca.caPem);
  const port = await freePort();
  let peer: Peer;
  try {
    peer = await startPeer('start-lemonldap-ng.sh', [String(port)], {
      LLNG_TLS_DIR: tlsDir, OIDC_CLIENT_ID: LLNG_CLIENT_ID, OIDC_CLIENT_SECRET: LLNG_CLIENT_SECRET, OIDC_REDIRECT_URI: redirectUris.join(' '),
    });
  } catch (err: unknown) {
    rmSync(tlsDir, { recursive: true, force: true });
    throw err;
  }
  const issuer = `https://127.0.0.1:${port}/`;
  const agent = new Agent({ connect: { ca: ca.caPem } });
  const portalFetch = (url: string, init: RequestInit) => undiciFetch(url, { ...(init as object), dispatcher: agent }) as unknown as Promise<Response>;
  return {
    issuer,
    browser: () => new SsoBrowser(portalFetch, new URL(issuer).origin),
    async stop() {
      await peer.stop();
      await agent.close();
      rmSync(tlsDir, { recursive: true, force: true });
    },
  };
}

/**
 * Follows redirects from `start` (svc's /auth/login); on the portal's login page posts `user`
 * and `password` with the form's hidden fields; returns where the redirects end. `headers` go
 * with every request (a browser's Accept, say).
 */
export async function llngBrowse(browser: SsoBrowser, portalOrigin: string, start: string, user: string, password: string, headers: Record<string, string> = {}): Promise<{ url: string; res: Response }> {
  let next: { url: string; form?: URLSearchParams } = { url: start };
  let posted = false;
  for (let hop = 0; hop < 20; hop++) {
    const res = await browser.request(next.url, next.form === undefined ? { headers } : { method: 'POST', body: next.form, headers });
    const location = res.headers.get('location');
    if (location !== null && res.status >= 300 && res.status < 400) {
      await res.body?.cancel();
      next = { url: new URL(location, next.url).href };
      continue;
    }
    if (new URL(next.url).origin !== portalOrigin || posted) return { url: next.url, res };
    const html = await res.text();
    const field = (name: string): string => new RegExp(`name="${name}"[^>]*value="([^"]*)"`).exec(html)?.[1] ?? '';
    if (field('token') === '') throw new Error(`no login form on the portal page (${res.status}): ${html.slice(0, 300)}`);
    const form = new URLSearchParams({ user, password, token: field('token'), url: field('url'), skin: field('skin'), timezone: '0' });
    next = { url: next.url, form };
    posted = true;
  }
  throw new Error('no end of redirects after 20 hops');
}
