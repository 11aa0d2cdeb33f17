/**
 * The SAML connector through the shared connector suite, against a real SimpleSAMLphp IdP
 * (scripts/peers/start-simplesamlphp.sh, started once for the file). A login is the browser's
 * round trip: begin() → the IdP's login form, filled in → its auto-POST form, whose SAMLResponse
 * goes to complete() with the saved request ID. svc never contacts the IdP itself, so the
 * down/slow cases do not apply (`upstream: undefined`). The outsider is carol, whom the IdP
 * signs in but who is in none of `allowedGroups`. `ca` is a secret reference, so the suite's
 * "no secret in the log" case has a value to look for.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Connector, Identity, LoginContext } from '../../../connectors/connector.js';
import { saml } from '../../../connectors/saml/index.js';
import { FormBrowser, isPage } from '../../helpers/form-browser.js';
import { freePort, startPeer, type Peer } from '../../helpers/peers.js';
import { connectorSuite, openThroughType } from '../connector-suite.js';

const ACS = 'https://svc.example.org/api/idp/callback';
let peer: Peer | undefined;
let idp = '';
let ca = '';

const secrets = (): Record<string, string> => ({ 'saml.ca': ca });

function config(): Record<string, unknown> {
  return {
    ssoURL: `${idp}/saml2/idp/SSOService.php`, ssoIssuer: `${idp}/saml2/idp/metadata.php`, ca: '$saml.ca',
    usernameAttr: 'uid', emailAttr: 'mail', groupsAttr: 'groups', allowedGroups: ['admins', 'devs'], nameIDPolicyFormat: 'unspecified',
  };
}

async function login(connector: Connector, username: string, password: string, ctx: LoginContext): Promise<Identity> {
  if (connector.kind !== 'browser') throw new Error('saml is a browser connector');
  const start = await connector.begin('suite-state', ctx);
  if (start.via !== 'redirect') throw new Error('expected a redirect to the IdP');
  const browser = new FormBrowser();
  const form = await browser.go(start.url, ctx.callbackUrl);
  if (!isPage(form)) throw new Error(`expected the IdP's login form, got a redirect to ${form.href}`);
  const post = await browser.submit(form, { username, password }, ctx.callbackUrl);
  if (!isPage(post)) throw new Error(`expected the IdP's auto-POST form, got a redirect to ${post.href}`);
  const field = (name: string): string => new RegExp(`name="${name}" value="([^"]*)"`).exec(post.html)?.[1] ?? '';
  if (field('SAMLResponse') === '') throw new Error(`the IdP sent no SAMLResponse: ${post.html.slice(0, 400)}`);
  return connector.complete(new URLSearchParams({ SAMLResponse: field('SAMLResponse'), RelayState: field('RelayState') }), start.saved, ctx);
}

connectorSuite({
  type: 'saml',
  callbackUrl: ACS,
  async start() {
    const port = await freePort();
    peer = await startPeer('start-simplesamlphp.sh', [String(port)], { SP_ENTITY_ID: ACS, SP_ACS_URL: ACS });
    idp = `http://127.0.0.1:${port}`;
    ca = await readFile(join(peer.dir, 'cert', 'idp.crt'), 'utf8');
  },
  async stop() {
    await peer?.stop();
  },
  config,
  get secrets() {
    return secrets();
  },
  open: (raw, log) => openThroughType(saml, raw, secrets(), log),
  login: (connector, who, ctx) => (who === 'member' ? login(connector, 'alice', 'alice123', ctx) : login(connector, 'carol', 'carol123', ctx)),
  member: { userId: 'alice', groups: ['admins', 'devs'] },
  outsiderRefusal: /not a member of any group allowed to log in here/,
  upstream: undefined,
  get badConfig() {
    const { groupsAttr: _groupsAttr, allowedGroups: _allowedGroups, ...rest } = config();
    return { raw: { ...rest, groupsDelim: ',' }, problem: 'groupsDelim: needs groupsAttr: it splits that attribute' };
  },
});
