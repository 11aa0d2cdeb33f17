/**
 * What the login flow tells a browser connector about the request: the callback URL, whether
 * the client asked for groups and for offline_access (the upstream OIDC connector asks its
 * provider for a refresh token only then, as Dex does with Scopes.OfflineAccess).
 */
import { expect } from 'chai';
import { pino } from 'pino';
import type { BrowserConnector, LoginContext } from '../../../connectors/connector.js';
import { createAccountStore } from '../../../src/idp/storage/federated-accounts.js';
import { createSealer } from '../../../src/lib/sealed.js';
import { createLoginFlow } from '../../../src/idp/login/login-flow.js';
import { createMemoryState } from '../../../src/state/memory.js';

describe('idp/login-flow: the context a browser connector gets', () => {
  const state = createMemoryState();
  after(() => state.close());
  const flow = createLoginFlow({ state, accounts: createAccountStore(state, createSealer('account-test-secret-key', 'idp-account')), callbackUrl: 'https://svc.example.org/api/idp/callback', csrfKey: 'k', log: pino({ level: 'silent' }) });

  async function contextFor(scope: string): Promise<LoginContext | undefined> {
    let seen: LoginContext | undefined;
    const connector: BrowserConnector = {
      kind: 'browser',
      begin: (_state, ctx) => { seen = ctx; return Promise.resolve({ via: 'redirect', url: 'https://idp.example.org/auth' }); },
      complete: () => Promise.reject(new Error('not here')),
    };
    await flow.begin(connector, { uid: 'u1', connectorId: 'corp', scope, source: '127.0.0.1' });
    return seen;
  }

  it('says offline_access and groups when the client asked for them, and not otherwise', async () => {
    expect(await contextFor('openid groups offline_access')).to.deep.include({ callbackUrl: 'https://svc.example.org/api/idp/callback', wantGroups: true, offlineAccess: true });
    expect(await contextFor('openid profile')).to.deep.include({ wantGroups: false, offlineAccess: false });
  });
});
