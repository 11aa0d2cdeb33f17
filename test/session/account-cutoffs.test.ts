import { expect } from 'chai';
import { pino } from 'pino';
import type { AccountSettings } from '../../src/accounts/config.js';
import { createAccountCutoffs, DISABLED_AT_HASH, FORMER_DISABLED_AT_HASH, type AccountCutoffs } from '../../src/session/account-cutoffs.js';
import { REVOKED_HASH } from '../../src/session/revocation.js';
import { createMemoryState } from '../../src/state/memory.js';
import { KEY_PREFIX, type StateBackend, type WriteOptions } from '../../src/state/state.js';
import { until } from '../state/state-suite.js';

const silent = pino({ level: 'silent' });
const account = (name: string, enabled: boolean): [string, AccountSettings] => [name, { name, enabled, capabilities: ['login'], tokens: [] }];

describe('session/account-cutoffs', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  async function replica(state: StateBackend, now: () => number, onRecorded?: (name: string, how: string, atMs: number) => void): Promise<AccountCutoffs> {
    const cutoffs = await createAccountCutoffs({ state, log: silent, now, ...(onRecorded !== undefined ? { onRecorded } : {}) });
    closers.push(() => cutoffs.close());
    return cutoffs;
  }

  it('records accounts disabled at start, newly disabled or removed, shares them, and only moves forward', async () => {
    const state = createMemoryState({ log: silent });
    closers.push(() => state.close());
    let now = 1_700_000_000_000;
    const a = await replica(state, () => now);
    await a.observe(new Map([account('alice', true), account('dave', false)]), undefined);
    expect([a.disabledAt('alice'), a.disabledAt('dave')]).to.deep.equal([undefined, now]);

    const b = await replica(state, () => now); // loads what A recorded
    expect(b.disabledAt('dave')).to.equal(now);

    now += 5_000;
    const before = new Map([account('alice', true), account('bob', true), account('dave', false)]);
    await a.observe(new Map([account('alice', false), account('dave', false)]), before);
    // alice disabled, bob removed: recorded now; dave stays disabled: his record is kept.
    expect([a.disabledAt('alice'), a.disabledAt('bob'), a.disabledAt('dave')]).to.deep.equal([now, now, now - 5_000]);
    await until(() => b.disabledAt('alice') === now && b.disabledAt('bob') === now);

    const late = await replica(state, () => now - 60_000); // a replica with a clock behind
    await late.observe(new Map([account('alice', false)]), undefined);
    expect(late.disabledAt('alice')).to.equal(now);
  });

  it('writes each record so that it survives a failover (replicated), in the revocation list\'s Cluster slot, and tells who deletes the account\'s API tokens', async () => {
    const state = createMemoryState({ log: silent });
    closers.push(() => state.close());
    const writes: { key: string; opts: WriteOptions | undefined }[] = [];
    const watched = new Proxy(state, {
      get(target, prop, receiver) {
        if (prop === 'hashSet') return (key: string, field: string, value: string, opts?: WriteOptions) => (writes.push({ key, opts }), target.hashSet(key, field, value, opts));
        return Reflect.get(target, prop, receiver) as unknown;
      },
    });
    const told: [string, string, number][] = [];
    const now = 1_700_000_000_000;
    const a = await replica(watched, () => now, (name, how, atMs) => told.push([name, how, atMs]));
    await a.observe(new Map([account('alice', true), account('dave', false)]), undefined);
    await a.observe(new Map([account('alice', false)]), new Map([account('alice', true), account('dave', false)]));
    expect(told).to.deep.equal([['dave', 'disabled', now], ['alice', 'disabled', now], ['dave', 'removed', now]]);
    expect(writes.map((w) => [w.key, w.opts?.replicated])).to.deep.equal([[DISABLED_AT_HASH, true], [DISABLED_AT_HASH, true], [DISABLED_AT_HASH, true]]);
    // Redis hashes only the first non-empty {…} of a key: the record's is the revocation list's whole key.
    expect(/\{([^}]+)\}/.exec(`${KEY_PREFIX}${DISABLED_AT_HASH}`)?.[1]).to.equal(`${KEY_PREFIX}${REVOKED_HASH}`);
  });

  it('still reads the records kept under the hash\'s former name', async () => {
    const state = createMemoryState({ log: silent });
    closers.push(() => state.close());
    await state.hashSet(FORMER_DISABLED_AT_HASH, 'alice', '1700000000000');
    const a = await replica(state, () => 1_700_000_100_000);
    expect(a.disabledAt('alice')).to.equal(1_700_000_000_000);
  });
});
