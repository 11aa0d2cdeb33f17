/**
 * The `ldap` connector type: a password form checked against a directory (Dex's LDAP
 * connector, keys unchanged). Parsing resolves secret references and checks the config; the
 * LDAP client library is loaded on the first login (./lazy.ts), never by `svc-server validate`.
 */
import { resolveForChecking } from '../../src/config/secret-ref.js';
import type { ConnectorType } from '../connector.js';
import { parseLdapConfig } from './config.js';
import { LazyLdapConnector } from './lazy.js';

export const ldap = {
  type: 'ldap',
  parse({ raw, secrets, at }) {
    // Checked whole even when a reference fails, so that its other problems are reported too.
    const { value: resolved, unresolved } = resolveForChecking(raw, secrets, at);
    const config = parseLdapConfig(resolved, at.except(unresolved));
    if (config === undefined || unresolved.length > 0) return undefined;
    return (deps) => new LazyLdapConnector(config, deps);
  },
} satisfies ConnectorType;
