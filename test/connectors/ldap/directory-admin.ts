/** Changes to the test directory (fixtures/ldap/ldap-connector.ldif), made as its admin: a user gone, a group changed. */
import { Client } from 'ldapts';

const ADMIN = { dn: 'cn=admin,dc=example,dc=org', password: 'adminpw' };

export async function asDirectoryAdmin<T>(ldapPort: number, work: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ url: `ldap://127.0.0.1:${ldapPort}`, timeout: 5_000, connectTimeout: 5_000 });
  try {
    await client.bind(ADMIN.dn, ADMIN.password);
    return await work(client);
  } finally {
    await client.unbind();
  }
}
