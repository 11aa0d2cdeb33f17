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
import { createLoginFlow, PendingLoginsRefused } from '../../../src/idp/login/login-flow.js';
import { createPendingBound, RECORD_OVERHEAD_BYTES } from '../../../src/idp/storage/pending-bound.js';
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

describe('idp/login-flow: browser round trips under the bound on pending logins', () => {
  const IDENTITY = { userId: 'u-1', username: 'one', emailVerified: false, groups: [] };

  it('charges each start to its source, refuses past the share, and gives it back when the answer comes', async () => {
    const state = createMemoryState();
    const bound = createPendingBound({ state, limits: { perSourceBytes: 3 * (400 + RECORD_OVERHEAD_BYTES), totalBytes: 1024 ** 2 }, now: Date.now, log: { warn() {} } });
    const flow = createLoginFlow({ state, accounts: createAccountStore(state, createSealer('account-test-secret-key', 'idp-account')), callbackUrl: 'https://svc.example.org/api/idp/callback', csrfKey: 'k', log: pino({ level: 'silent' }), pending: bound });
    let lastState = '';
    const connector: BrowserConnector = {
      kind: 'browser',
      begin: (s) => { lastState = s; return Promise.resolve({ via: 'redirect', url: `https://idp.example.org/auth?state=${s}` }); },
      complete: () => Promise.resolve(IDENTITY),
    };
    const request = { uid: 'u1', connectorId: 'corp', scope: 'openid', source: '198.51.100.7' };
    // One interaction's start page reloaded again and again: each start keeps a transaction.
    const started: { state: string; binding: string }[] = [];
    for (let i = 0; i < 3; i++) started.push({ binding: (await flow.begin(connector, request)).binding, state: lastState });
    const err = await flow.begin(connector, request).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(PendingLoginsRefused);
    expect((err as Error).message).to.equal('too many logins are pending; try again in a few minutes');
    expect((await flow.begin(connector, { ...request, source: '203.0.113.5' })).binding, 'another source').to.be.a('string');
    const first = started[0] as { state: string; binding: string };
    expect(await flow.complete('u1', first.state, first.binding, new URLSearchParams(), () => connector)).to.deep.equal({ kind: 'ok', uid: 'u1' });
    expect((await flow.begin(connector, request)).binding, 'the answered one gave its share back').to.be.a('string');
    await state.close();
  });
});
