/**
 * The directory of the LDAP connector's end-to-end tests: a private slapd with
 * fixtures/ldap/ldap-connector.ldif on a free loopback port, plain LDAP only (no ldaps
 * listener), and the idp.config connector `corp` that reads it. The connector's reader password
 * is the secret reference `$ldap.bindPW`: svc-secret needs LDAP_BIND_SECRETS.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ldapConnectorConfig } from '../connectors/ldap/fixture.js';
import { freePort, startPeer } from './peers.js';

const USERS_LDIF = join(fileURLToPath(new URL('../../fixtures/', import.meta.url)), 'ldap', 'ldap-connector.ldif');

/** svc-secret's entry the connector's `bindPW: $ldap.bindPW` resolves to. */
export const LDAP_BIND_SECRETS = { 'ldap.bindPW': 'readerpw' } as const;

export interface LdapDirectory {
  readonly port: number;
  /** Stops slapd and removes its dir; idempotent. */
  stop(): Promise<void>;
}

/** `env`: start-slapd.sh's other knobs (ACCESSLOG=1, to count binds). */
export async function startLdapDirectory(env: Readonly<Record<string, string>> = {}): Promise<LdapDirectory> {
  const port = await freePort();
  const peer = await startPeer('start-slapd.sh', [String(port)], { ...env, LDAPS: '0', USERS_LDIF });
  return { port, stop: () => peer.stop() };
}

/** idp.config's LDAP connector `corp` ("Corp directory") on `directory`. */
export function corpLdapConnector(directory: LdapDirectory): { type: 'ldap'; id: string; name: string; config: Record<string, unknown> } {
  return { type: 'ldap', id: 'corp', name: 'Corp directory', config: ldapConnectorConfig(directory.port) };
}
