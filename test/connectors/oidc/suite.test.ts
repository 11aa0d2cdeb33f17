/**
 * The `oidc` connector through the shared connector suite, with LemonLDAP::NG (a provider
 * nobody here wrote) as its upstream, on top of a private slapd (test/helpers/llng.ts), started
 * once for the file. A login is the browser's round trip: begin → the portal's login form →
 * the portal's redirect to svc's callback → complete. The outsider is bob, whom the portal logs
 * in but who is in none of `allowedGroups`: the connector itself refuses him.
 */
import type { Connector } from '../../../connectors/connector.js';
import { oidc } from '../../../connectors/oidc/index.js';
import { FormBrowser, isPage } from '../../helpers/form-browser.js';
import { LLNG_CLIENT_ID, startLlng, throughLlng, type Llng } from '../../helpers/llng-upstream.js';
import { connectorSuite, openThroughType } from '../connector-suite.js';

const CALLBACK = 'https://svc.example.org/api/idp/callback';
const SECRETS = { 'oidc.clientSecret': 'llng-suite-client-secret' };

let llng: Llng | undefined;

function config(issuer: string): Record<string, unknown> {
  return {
    issuer, clientID: LLNG_CLIENT_ID, clientSecret: '$oidc.clientSecret',
    // LemonLDAP::NG sends name, email and groups from userinfo only, and no email_verified.
    scopes: ['profile', 'email', 'groups'], getUserInfo: true, insecureSkipEmailVerified: true,
    insecureEnableGroups: true, allowedGroups: ['admins'],
  };
}

connectorSuite({
  type: 'oidc',
  callbackUrl: CALLBACK,
  async start() {
    llng = await startLlng([CALLBACK], SECRETS['oidc.clientSecret']);
  },
  async stop() {
    await llng?.stop();
  },
  config: () => config(llng?.issuer ?? ''),
  secrets: SECRETS,
  open: (raw, log) => openThroughType(oidc, raw, SECRETS, log),
  async login(connector: Connector, who, ctx) {
    if (connector.kind !== 'browser') throw new Error('the oidc connector is a browser connector');
    const start = await connector.begin('suite-state', ctx);
    if (start.via !== 'redirect') throw new Error('expected a redirect to the provider');
    const [user, password] = who === 'member' ? ['alice', 'alice123'] : ['bob', 'bob123'];
    const back = await throughLlng(new FormBrowser(), start.url, user, password, CALLBACK);
    if (isPage(back)) throw new Error(`the provider did not send the browser back (${back.status} at ${back.url})`);
    return connector.complete(back.searchParams, start.saved, ctx);
  },
  member: { userId: 'alice', groups: ['admins'] },
  outsiderRefusal: /^your account is not in any group allowed to log in here$/,
  upstream: (port) => config(`http://127.0.0.1:${port}/`),
  badConfig: { raw: { ...config('https://idp.example.org/'), redirectURI: 'https://svc.example.org/api/dex/callback' }, problem: 'redirectURI: must not be set: svc gives the connector <url>/api/idp/callback (with the url of svc-cm) as its callback; register that URL upstream' },
});
