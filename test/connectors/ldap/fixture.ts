/**
 * The LDAP connector's config for the directory of fixtures/ldap/ldap-connector.ldif (slapd on
 * `ldapPort`, plain LDAP), shared by the end-to-end tests: the reader account's password is the
 * secret reference `$ldap.bindPW` (svc-secret's `ldap.bindPW: readerpw`); groups by member DN
 * and by memberUid.
 */
export function ldapConnectorConfig(ldapPort: number): Record<string, unknown> {
  return {
    host: `127.0.0.1:${ldapPort}`, insecureNoSSL: true, bindDN: 'cn=reader,dc=example,dc=org', bindPW: '$ldap.bindPW',
    userSearch: { baseDN: 'ou=people,dc=example,dc=org', filter: '(objectClass=inetOrgPerson)', username: 'uid', idAttr: 'uid', emailAttr: 'mail', nameAttr: 'cn', preferredUsernameAttr: 'uid' },
    groupSearch: { baseDN: 'ou=groups,dc=example,dc=org', nameAttr: 'cn', userMatchers: [{ userAttr: 'DN', groupAttr: 'member' }, { userAttr: 'uid', groupAttr: 'memberUid' }] },
  };
}
