/**
 * Who may call, for every issuer: svc's own tokens first, then each SSO issuer's verifier, all
 * behind one authenticator (one revocation list, one principal cache) and one reading of the
 * caller (http/caller.ts) that the app, the proxy and WebSocket handshakes share.
 */
import { withApiTokenIds } from '../session/api-token-ids.js';
import type { ReadCaller, TokenRecheck } from '../http/caller.js';
import { createReadCaller } from '../http/caller.js';
import { createSessionUsage } from './session-usage.js';
import { readInt } from '../session/limits.js';
import { createSessionRegistry, DEFAULT_SESSIONS_PER_ACCOUNT, SESSIONS_PER_ACCOUNT_ENV, type SessionRegistry } from '../session/registry.js';
import { createAccountCutoffs, followAccounts } from '../session/account-cutoffs.js';
import { createAuthenticator, type Authenticator } from '../session/authenticate.js';
import { createDisabledAccountTokens } from '../session/disabled-account-tokens.js';
import { createLocalVerifier } from '../session/local-verifier.js';
import { createLogout, type Logout } from '../session/logout.js';
import { createRevocation, type Revocation } from '../session/revocation.js';
import { createRevocationsEpoch, type RevocationsEpoch } from '../session/revocations-epoch.js';
import { createTokenSigner, type TokenSigner } from '../session/tokens.js';
import type { TokenVerifier } from '../session/token-verifier.js';
import type { Services } from './services.js';

export interface Authentication {
  readonly signer: TokenSigner;
  readonly revocation: Revocation;
  /** When the record of revocations began: session tokens issued before are refused. */
  readonly epoch: RevocationsEpoch;
  readonly authenticator: Authenticator;
  readonly readCaller: ReadCaller;
  /** Every login's session, listed and ended by the session routes and back-channel logout. */
  readonly sessions: SessionRegistry;
  /** Logout with any kind of token: an API token's record is deleted from the config store (session/logout.ts). */
  readonly logout: Logout;
  /** The SSO feature's recheck of its sessions' groups, applied by readCaller to every token however sent (set once, after this stage). */
  recheckTokensWith(recheck: TokenRecheck): void;
  close(): Promise<void>;
}

/** `verifiers`: the other issuers' (SSO features, tests), after svc's own. */
export async function buildAuthentication(services: Services, verifiers: readonly TokenVerifier[]): Promise<Authentication> {
  const { settings, state, log, now } = services;
  const signer = createTokenSigner({ secretKey: () => settings.current().serverSecretKey, now });
  const revocation = await createRevocation({ state, log, now, registry: services.metrics.registry });
  const epoch = await createRevocationsEpoch({ state, log, now, registry: services.metrics.registry, listLoaded: () => revocation.loadedOnce() });
  // A disabled or removed account's API tokens are deleted from svc-secret: the cutoff above lives in state, which can be lost.
  const disabledTokens = createDisabledAccountTokens({ store: services.store, audit: services.audit, log });
  const cutoffs = await createAccountCutoffs({ state, log, now, onRecorded: (name, how, atMs) => void disabledTokens.deleteTokensOf(name, how, atMs) });
  const stopFollowing = await followAccounts(cutoffs, settings);
  const accounts = () => settings.current().accounts;
  const local = withApiTokenIds(createLocalVerifier({ signer, accounts, disabledAt: cutoffs.disabledAt, mfaRequired: () => settings.current().mfaRequired }), accounts);
  const authenticator = createAuthenticator({ verifiers: [local, ...verifiers], revocation, epoch });
  const sessions = createSessionRegistry({
    state, revocation, audit: services.audit, log, now,
    maxPerAccount: readInt(services.env, log, SESSIONS_PER_ACCOUNT_ENV, DEFAULT_SESSIONS_PER_ACCOUNT, 1),
  });
  const onUse = createSessionUsage({ registry: sessions, trustedProxies: services.trustedProxies, log, now });
  // The SSO feature is built after this stage (its renewal needs the revocation list and the sessions).
  let recheck: TokenRecheck | undefined;
  return {
    signer,
    revocation,
    epoch,
    authenticator,
    sessions,
    logout: createLogout({ sessions, revocation, log }),
    readCaller: createReadCaller({ authenticator, configuredUrl: () => settings.current().url, onUse, recheck: () => recheck }),
    recheckTokensWith(given) {
      recheck = given;
    },
    async close() {
      stopFollowing();
      disabledTokens.close();
      await cutoffs.close();
      await revocation.close();
      await epoch.close();
    },
  };
}
