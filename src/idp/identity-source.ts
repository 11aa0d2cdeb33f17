/**
 * The bundled provider's users as personal API tokens need them (src/ssotokens/recheck.ts):
 * the identity the provider holds for a `sub` (its login record), and the connector's fresh
 * view of it. Unlike the refresh grant (provider.ts), which answers any failure with
 * invalid_grant, a failure to reach the upstream is thrown here, apart from a refusal (null):
 * the tokens' recheck treats "user gone" and "directory down" differently.
 */
import type { Identity } from '../../connectors/connector.js';
import { refusesUser } from '../../connectors/errors.js';
import { PermissionDenied } from '../errors.js';
import type { IdentitySource } from '../ssotokens/recheck.js';
import type { ConnectorSource } from './connectors/connector-source.js';
import type { AccountStore } from './storage/federated-accounts.js';

/** As the refresh grant's: long enough for a slow directory, bounded. */
const RECHECK_TIMEOUT_MS = 15_000;

export function createIdentitySource(accounts: AccountStore, connectors: ConnectorSource, callbackUrl: string): IdentitySource {
  return {
    async find(sub) {
      const account = await accounts.find(sub);
      if (account === undefined) return undefined;
      if (connectors.get(account.connectorId)?.refresh === undefined) {
        throw new PermissionDenied(`connector '${account.connectorId}' cannot check its users again, so they cannot make personal API tokens`);
      }
      return account;
    },
    async refresh(connectorId, identity): Promise<Identity | null> {
      // A connector removed from idp.config no longer vouches for anyone.
      const connector = connectors.get(connectorId);
      if (connector?.refresh === undefined) return null;
      const deadline = new AbortController();
      const timer = setTimeout(() => deadline.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')), RECHECK_TIMEOUT_MS);
      try {
        return await connector.refresh(identity, { callbackUrl, wantGroups: true, signal: deadline.signal });
      } catch (err: unknown) {
        // No longer in the allowed orgs, teams or groups: a refusal, not an upstream that is down.
        if (refusesUser(err)) return null;
        throw err;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
