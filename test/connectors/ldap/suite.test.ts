/**
 * The LDAP connector through the shared connector suite, against a real slapd
 * (scripts/peers/start-slapd.sh with fixtures/ldap/ldap-connector.ldif), started once for the file.
 */
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import type { Connector } from '../../../connectors/connector.js';
import { ldap } from '../../../connectors/ldap/index.js';
import { connectorSuite, openThroughType } from '../connector-suite.js';
import { freePort, startPeer, type Peer } from '../../helpers/peers.js';

const FIXTURES = fileURLToPath(new URL('../../../fixtures/', import.meta.url));
const SECRETS = { 'ldap.bindPW': 'readerpw' };

let peer: Peer | undefined;
let port = 0;

function config(host: string): Record<string, unknown> {
  return {
    host,
    insecureNoSSL: true,
    bindDN: 'cn=reader,dc=example,dc=org',
    bindPW: '$ldap.bindPW',
    userSearch: { baseDN: 'ou=people,dc=example,dc=org', filter: '(objectClass=inetOrgPerson)', username: 'uid', idAttr: 'uid', emailAttr: 'mail', nameAttr: 'cn' },
    groupSearch: { baseDN: 'ou=groups,dc=example,dc=org', nameAttr: 'cn', userMatchers: [{ userAttr: 'DN', groupAttr: 'member' }, { userAttr: 'uid', groupAttr: 'memberUid' }] },
  };
}

function passwordConnector(connector: Connector): Connector & { kind: 'password' } {
  if (connector.kind !== 'password') throw new Error('the ldap connector takes a password');
  return connector;
}

connectorSuite({
  type: 'ldap',
  callbackUrl: 'https://svc.example.org/api/idp/callback',
  async start() {
    port = await freePort();
    peer = await startPeer('start-slapd.sh', [String(port), String(await freePort())], { USERS_LDIF: join(FIXTURES, 'ldap', 'ldap-connector.ldif') });
  },
  async stop() {
    await peer?.stop();
  },
  config: () => config(`127.0.0.1:${port}`),
  secrets: SECRETS,
  open: (raw, log) => openThroughType(ldap, raw, SECRETS, log),
  async login(connector, who, ctx) {
    const form = passwordConnector(connector);
    // The outsider is a real user with a wrong password: the directory refuses the bind.
    return who === 'member' ? form.login('alice', 'alice123', ctx) : form.login('bob', 'not-bobs-password', ctx);
  },
  member: { userId: 'alice', groups: ['admins', 'devs', 'ops'] },
  outsiderRefusal: null,
  upstream: (at) => config(`127.0.0.1:${at}`),
  // Dex's key for the user's name is nameAttr; usernameAttr is SAML's and unknown here.
  badConfig: { raw: { ...config('127.0.0.1:389'), userSearch: { baseDN: 'ou=people,dc=example,dc=org', username: 'uid', idAttr: 'uid', usernameAttr: 'uid' } }, problem: 'userSearch.usernameAttr: unknown key' },
});
