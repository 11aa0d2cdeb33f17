/** A disabled or removed account's API tokens are deleted from svc-secret, durably, with the audit event of a deletion. */
import { expect } from 'chai';
import { SETTINGS_SECRET, type StoreSnapshot } from '../../src/config/manifests.js';
import { patchedValues, type SecretPatch } from '../../src/config/store.js';
import type { AuditEvent } from '../../src/audit/trail.js';
import { createDisabledAccountTokens, type DisabledAccountTokens } from '../../src/session/disabled-account-tokens.js';

const T = 1_700_000_000_000;
const record = (id: string, iatMs: number) => ({ id, jti: `jti-${id}`, iat: Math.floor(iatMs / 1000) });

/** svc-secret in a map, written by the same read-modify-write the stores run; `failures` writes fail first. */
function fakeStore(data: Record<string, string>, hasSecret = true) {
  const held = { data: { ...data }, writes: 0, failures: 0, calls: 0 };
  return {
    held,
    current: (): StoreSnapshot => ({
      configMaps: new Map(),
      secrets: new Map(hasSecret ? [[SETTINGS_SECRET, { name: SETTINGS_SECRET, file: 'svc-secret.yaml', labels: {}, data: held.data }]] : []),
      applications: [],
    }),
    updateSecret(name: string, mutate: (current: Readonly<Record<string, string>>) => SecretPatch): Promise<void> {
      held.calls++;
      if (name !== SETTINGS_SECRET) return Promise.reject(new Error(`unexpected secret ${name}`));
      if (held.failures > 0) {
        held.failures--;
        return Promise.reject(new Error('the API server answered 503'));
      }
      const patch = mutate(held.data);
      if (Object.keys(patch.set ?? {}).length + (patch.delete ?? []).length > 0) {
        held.data = patchedValues(held.data, patch);
        held.writes++;
      }
      return Promise.resolve();
    },
  };
}

describe('session/disabled-account-tokens', () => {
  let events: AuditEvent[];
  let warnings: string[];
  let deleter: DisabledAccountTokens | undefined;
  beforeEach(() => {
    events = [];
    warnings = [];
  });
  afterEach(() => deleter?.close());

  function create(store: ReturnType<typeof fakeStore>): DisabledAccountTokens {
    deleter = createDisabledAccountTokens({
      store,
      audit: { record: (e) => events.push(e) },
      log: { warn: (_o: unknown, m?: string) => void warnings.push(m ?? ''), info: () => undefined },
      retryFirstMs: 10,
    });
    return deleter;
  }

  it('deletes the records issued at or before the disable, one token-deleted event each with the reason, and keeps the other keys', async () => {
    const store = fakeStore({
      'accounts.alice.tokens': JSON.stringify([record('ci', T - 60_000), record('same-second', T), record('made-after', T + 5_000)]),
      'accounts.bob.tokens': JSON.stringify([record('bob-ci', T - 60_000)]),
      'operator.note': 'keep me',
    });
    await create(store).deleteTokensOf('alice', 'disabled', T);
    expect(JSON.parse(store.held.data['accounts.alice.tokens'] ?? '[]')).to.deep.equal([record('made-after', T + 5_000)]);
    expect(store.held.data['accounts.bob.tokens']).to.equal(JSON.stringify([record('bob-ci', T - 60_000)]));
    expect(store.held.data['operator.note']).to.equal('keep me');
    expect(events).to.deep.equal(['ci', 'same-second'].map((id) => ({
      category: 'iam', type: 'deletion', action: 'token-deleted', outcome: 'success', reason: 'account-disabled: the account was disabled', svc: { account: 'alice', tokenId: id },
    })));
  });

  it('a removed account: every record goes and the key with it; a second replica doing the same writes nothing and records nothing', async () => {
    const store = fakeStore({ 'accounts.carol.tokens': JSON.stringify([record('a', T - 1_000), record('b', T - 2_000)]) });
    const one = create(store);
    await one.deleteTokensOf('carol', 'removed', T);
    expect(store.held.data).to.not.have.property('accounts.carol.tokens');
    expect(events.map((e) => [e.svc?.['tokenId'], e.reason])).to.deep.equal([['a', 'account-removed: the account was removed from svc-cm'], ['b', 'account-removed: the account was removed from svc-cm']]);
    await one.deleteTokensOf('carol', 'removed', T);
    expect([store.held.writes, events.length], 'idempotent').to.deep.equal([1, 2]);
  });

  it('an unreadable record list of a disabled account is deleted whole', async () => {
    const store = fakeStore({ 'accounts.alice.tokens': 'not json' });
    await create(store).deleteTokensOf('alice', 'disabled', T);
    expect(store.held.data).to.not.have.property('accounts.alice.tokens');
    expect(events[0]?.reason).to.equal('account-disabled: the account was disabled; its unreadable accounts.alice.tokens deleted whole');
  });

  it('a failed write is logged and tried again until it is done', async () => {
    const store = fakeStore({ 'accounts.alice.tokens': JSON.stringify([record('ci', T - 60_000)]) });
    store.held.failures = 2;
    await create(store).deleteTokensOf('alice', 'disabled', T);
    expect(store.held.calls).to.equal(3);
    expect(store.held.data).to.not.have.property('accounts.alice.tokens');
    expect(warnings).to.have.length(2);
    expect(warnings[0]).to.equal("accounts: the API tokens of account 'alice' (disabled) could not be deleted from svc-secret; tried again in 10 ms, and refused meanwhile by the record in the state backend, which a loss of state would take with it");
    expect(events).to.have.length(1);
  });

  it('writes nothing where there is no svc-secret (a write would create it)', async () => {
    const store = fakeStore({}, false);
    await create(store).deleteTokensOf('alice', 'disabled', T);
    expect([store.held.calls, events.length]).to.deep.equal([0, 0]);
  });

  it('stops trying once closed', async () => {
    const store = fakeStore({ 'accounts.alice.tokens': JSON.stringify([record('ci', T - 60_000)]) });
    store.held.failures = 1_000;
    const d = create(store);
    const done = d.deleteTokensOf('alice', 'disabled', T);
    await new Promise((r) => setTimeout(r, 50));
    d.close();
    await done;
    const calls = store.held.calls;
    await new Promise((r) => setTimeout(r, 100));
    expect(store.held.calls).to.equal(calls);
  });
});
