/**
 * LemonLDAP::NG as an upstream OpenID provider of the bundled provider's `oidc` connector: a private slapd (scripts/peers/
 * start-slapd.sh: alice/alice123 in admins and devs, bob/bob123 in devs) behind a private
 * LemonLDAP::NG portal (scripts/peers/start-lemonldap-ng.sh) with one confidential client.
 *
 * The start script's client gets no refresh tokens; the tests need them, so they change the
 * portal's configuration the way an administrator would: a new configuration number
 * (lmConf-2.json) with the client's `oidcRPMetaDataOptionsRefreshToken` on, which the portal
 * picks up within its checkTime (1 s in the packaged lemonldap-ng.ini). The start script stays
 * as it is. LemonLDAP::NG's refresh tokens are tied to the user's portal session: a logout at
 * the portal ends them.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FormBrowser, isPage, type Page } from './form-browser.js';
import { freePort, startPeer, type Peer } from './peers.js';

export const LLNG_CLIENT_ID = 'broker';

export interface Llng {
  /** `http://127.0.0.1:<port>/`, as the portal names itself. */
  readonly issuer: string;
  readonly clientSecret: string;
  stop(): Promise<void>;
}

const READY_TIMEOUT_MS = 15_000;

export async function startLlng(redirectUris: readonly string[], clientSecret: string): Promise<Llng> {
  const ldapPort = await freePort();
  const slapd: Peer = await startPeer('start-slapd.sh', [String(ldapPort)], { LDAPS: '0' });
  let portal: Peer | undefined;
  try {
    const port = await freePort();
    portal = await startPeer('start-lemonldap-ng.sh', [String(port)], {
      LLNG_LDAP_URL: `ldap://127.0.0.1:${ldapPort}`, OIDC_CLIENT_ID: LLNG_CLIENT_ID, OIDC_CLIENT_SECRET: clientSecret, OIDC_REDIRECT_URI: redirectUris.join(' '),
    });
    const issuer = `http://127.0.0.1:${port}/`;
    await enableRefreshTokens(portal.dir, issuer);
    const running = portal;
    return { issuer, clientSecret, stop: async () => { await running.stop(); await slapd.stop(); } };
  } catch (err: unknown) {
    await portal?.stop();
    await slapd.stop();
    throw err;
  }
}

async function enableRefreshTokens(dir: string, issuer: string): Promise<void> {
  const conf = JSON.parse(await readFile(join(dir, 'conf', 'lmConf-1.json'), 'utf8')) as Record<string, unknown> & { oidcRPMetaDataOptions: Record<string, Record<string, unknown>> };
  conf['cfgNum'] = 2;
  const client = conf.oidcRPMetaDataOptions[LLNG_CLIENT_ID];
  if (client === undefined) throw new Error(`the portal's configuration has no client ${LLNG_CLIENT_ID}`);
  client['oidcRPMetaDataOptionsRefreshToken'] = 1;
  await writeFile(join(dir, 'conf', 'lmConf-2.json'), JSON.stringify(conf));
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    const doc = await (await fetch(`${issuer}.well-known/openid-configuration`)).json() as { grant_types_supported?: string[] };
    if (doc.grant_types_supported?.includes('refresh_token') === true) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`LemonLDAP::NG did not load the configuration with refresh tokens within ${READY_TIMEOUT_MS} ms (see ${dir}/log/portal.log)`);
}

/**
 * Posts the portal's login form on `page` as a person would (its CSRF token included, which
 * FormBrowser does not read because the input lists `id` first), following redirects until one
 * leaves for `stopAt`.
 */
export async function submitLlngLogin(browser: FormBrowser, page: Page, user: string, password: string, stopAt: string): Promise<URL | Page> {
  const token = /name="token" value="([^"]*)"/.exec(page.html)?.[1];
  if (token === undefined) throw new Error(`not LemonLDAP::NG's login form (${page.status} at ${page.url}): ${page.html.slice(0, 300)}`);
  return browser.submit(page, { user, password, token, timezone: '0' }, stopAt);
}

/** From `url` to `stopAt` through the portal: its login form when it shows one (no portal session yet), else straight through. */
export async function throughLlng(browser: FormBrowser, url: string, user: string, password: string, stopAt: string): Promise<URL | Page> {
  const first = await browser.go(url, stopAt);
  return isPage(first) && /name="token"/.test(first.html) ? submitLlngLogin(browser, first, user, password, stopAt) : first;
}
