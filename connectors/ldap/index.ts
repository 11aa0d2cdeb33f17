/**
 * The `ldap` connector type: a password form checked against a directory (Dex's LDAP
 * connector, keys unchanged). Parsing resolves secret references and checks the config; the
 * LDAP client library is loaded on the first login (./lazy.ts), never by `svc-server validate`.
 */
import { resolveAllReferences } from '../../src/config/secret-ref.js';
import type { ConnectorType } from '../connector.js';
import { parseLdapConfig } from './config.js';
import { LazyLdapConnector } from './lazy.js';

export const ldap = {
  type: 'ldap',
  parse({ raw, secrets, at }) {
    const resolved = resolveAllReferences(raw, secrets, at);
    if (resolved === undefined) return undefined;
    const config = parseLdapConfig(resolved, at);
    if (config === undefined) return undefined;
    return (deps) => new LazyLdapConnector(config, deps);
  },
} satisfies ConnectorType;
