/**
 * What the login flow tells a browser connector about the request: the callback URL, whether
 * the client asked for groups and for offline_access (the upstream OIDC connector asks its
 * provider for a refresh token only then, as Dex does with Scopes.OfflineAccess); and that an
 * interaction keeps one transaction however often its login is started.
 */
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import type { BrowserConnector, Identity, LoginContext } from '../../../connectors/connector.js';
import { createAccountStore } from '../../../src/idp/storage/federated-accounts.js';
import { createSealer } from '../../../src/lib/sealed.js';
import { createLoginFlow, PendingLoginsRefused, type LoginFlow } from '../../../src/idp/login/login-flow.js';
import { createPendingBound, RECORD_OVERHEAD_BYTES } from '../../../src/idp/storage/pending-bound.js';
import { createMemoryState } from '../../../src/state/memory.js';
import { createRedisState } from '../../../src/state/redis.js';
import type { StateBackend } from '../../../src/state/state.js';
import { startRedis } from '../../helpers/peers.js';

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
    await flow.begin(connector, { uid: 'u1', connectorId: 'corp', scope, source: '198.51.100.7' });
    return seen;
  }

  it('says offline_access and groups when the client asked for them, and not otherwise', async () => {
    expect(await contextFor('openid groups offline_access')).to.deep.include({ callbackUrl: 'https://svc.example.org/api/idp/callback', wantGroups: true, offlineAccess: true });
    expect(await contextFor('openid profile')).to.deep.include({ wantGroups: false, offlineAccess: false });
  });
});

/**
 * Every GET of a browser connector's page starts its login again: each start must replace the
 * interaction's transaction, never add one, or anyone holding one login page fills the state
 * backend (a record per start, 5 minutes each). Against memory and a real Redis.
 */
const STARTS = 200;

function runOneTransactionPerInteraction(name: string, open: () => Promise<{ state: StateBackend; close(): Promise<void> }>): void {
  describe(`idp/login-flow: many starts of one interaction keep one transaction (${name})`, function () {
    let state: StateBackend;
    let close: () => Promise<void>;
    let flow: LoginFlow;
    /** Every key the flow wrote with set(), to count those still live afterwards. */
    const written = new Set<string>();
    const identity: Identity = { userId: '7', username: 'alice', emailVerified: true, groups: [] };
    let completedStates: string[] = [];
    let lastState = '';
    const connector: BrowserConnector = {
      kind: 'browser',
      begin: (s) => { lastState = s; return Promise.resolve({ via: 'redirect', url: `https://idp.example.org/auth?state=${s}` }); },
      complete: (params) => { completedStates.push(params.get('state') ?? ''); return Promise.resolve(identity); },
    };

    before(async function () {
      ({ state, close } = await open());
      const recording: StateBackend = new Proxy(state, {
        get(target, prop, receiver) {
          if (prop !== 'set') return Reflect.get(target, prop, receiver) as unknown;
          return (key: string, value: string, opts?: Parameters<StateBackend['set']>[2]) => { written.add(key); return target.set(key, value, opts); };
        },
      });
      flow = createLoginFlow({ state: recording, accounts: createAccountStore(state, createSealer('account-test-secret-key', 'idp-account')), callbackUrl: 'https://svc.example.org/api/idp/callback', csrfKey: 'k', log: pino({ level: 'silent' }) });
    });
    after(() => close());

    async function liveTransactions(): Promise<number> {
      let live = 0;
      for (const key of written) if (key.startsWith('idp:txn:') && (await state.get(key)) !== null) live += 1;
      return live;
    }

    it(`leaves one record after ${STARTS} starts; the last completes the login and an earlier one's answer is refused`, async function () {
      const uid = `uid-${randomUUID()}`;
      const req = { uid, connectorId: 'corp', scope: 'openid', source: '198.51.100.7' };
      const first = { ...(await flow.begin(connector, req)), state: lastState };
      for (let i = 1; i < STARTS - 1; i += 1) await flow.begin(connector, req);
      const last = { ...(await flow.begin(connector, req)), state: lastState };
      expect(await liveTransactions(), 'transaction records of the interaction').to.equal(1);

      const answer = (s: string) => new URLSearchParams({ code: 'c', state: s });
      completedStates = [];
      expect(await flow.interactionOf(first.state), 'an earlier start is not routed').to.equal(undefined);
      expect(await flow.complete(uid, first.state, first.binding, answer(first.state), () => connector)).to.deep.equal({ kind: 'expired' });
      expect(completedStates, 'the connector never read the earlier answer').to.deep.equal([]);

      expect(await flow.interactionOf(last.state)).to.equal(uid);
      expect(await flow.complete(uid, last.state, last.binding, answer(last.state), () => connector)).to.deep.equal({ kind: 'ok', uid });
      expect(completedStates).to.deep.equal([last.state]);
      expect((await flow.takePending(uid, last.binding))?.sub).to.be.a('string');
      expect(await liveTransactions(), 'the completed transaction is used up').to.equal(0);
    });
  });
}

runOneTransactionPerInteraction('memory', () => {
  const state = createMemoryState();
  return Promise.resolve({ state, close: () => state.close() });
});

runOneTransactionPerInteraction('redis', async () => {
  const redis = await startRedis();
  const state = createRedisState({ url: redis.url, log: pino({ level: 'silent' }) });
  return { state, close: async () => { await state.close(); await redis.stop(); } };
});

describe('idp/login-flow: browser round trips under the bound on pending logins', () => {
  const IDENTITY = { userId: 'u-1', username: 'one', emailVerified: false, groups: [] };

  it('charges each interaction\'s transaction to its source, refuses past the share, and gives it back when the answer comes', async () => {
    const state = createMemoryState();
    const bound = createPendingBound({ state, limits: { perSourceBytes: 3 * (400 + RECORD_OVERHEAD_BYTES), totalBytes: 1024 ** 2 }, now: Date.now, log: { warn() {} } });
    const flow = createLoginFlow({ state, accounts: createAccountStore(state, createSealer('account-test-secret-key', 'idp-account')), callbackUrl: 'https://svc.example.org/api/idp/callback', csrfKey: 'k', log: pino({ level: 'silent' }), pending: bound });
    let lastState = '';
    const connector: BrowserConnector = {
      kind: 'browser',
      begin: (s) => { lastState = s; return Promise.resolve({ via: 'redirect', url: `https://idp.example.org/auth?state=${s}` }); },
      complete: () => Promise.resolve(IDENTITY),
    };
    const request = (uid: string, source = '198.51.100.7') => ({ uid, connectorId: 'corp', scope: 'openid', source });
    // Three interactions of one source hold its share; a start again of one of them keeps its charge.
    const started: { state: string; binding: string }[] = [];
    for (const uid of ['u1', 'u2', 'u3']) started.push({ binding: (await flow.begin(connector, request(uid))).binding, state: lastState });
    expect((await flow.begin(connector, request('u3'))).binding, 'a start again of a charged interaction').to.be.a('string');
    const err = await flow.begin(connector, request('u4')).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(PendingLoginsRefused);
    expect((err as Error).message).to.equal('too many logins are pending; try again in a few minutes');
    expect((await flow.begin(connector, request('u5', '203.0.113.5'))).binding, 'another source').to.be.a('string');
    const first = started[0] as { state: string; binding: string };
    expect(await flow.complete('u1', first.state, first.binding, new URLSearchParams(), () => connector)).to.deep.equal({ kind: 'ok', uid: 'u1' });
    expect((await flow.begin(connector, request('u4'))).binding, 'the answered one gave its share back').to.be.a('string');
    await state.close();
  });
});
