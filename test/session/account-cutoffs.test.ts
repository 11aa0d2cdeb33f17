import { expect } from 'chai';
import { pino } from 'pino';
import type { AccountSettings } from '../../src/accounts/config.js';
import { createAccountCutoffs, type AccountCutoffs } from '../../src/session/account-cutoffs.js';
import { createMemoryState } from '../../src/state/memory.js';
import type { StateBackend } from '../../src/state/state.js';
import { until } from '../state/state-suite.js';

const silent = pino({ level: 'silent' });
const account = (name: string, enabled: boolean): [string, AccountSettings] => [name, { name, enabled, capabilities: ['login'], tokens: [] }];

describe('session/account-cutoffs', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  async function replica(state: StateBackend, now: () => number): Promise<AccountCutoffs> {
    const cutoffs = await createAccountCutoffs({ state, log: silent, now });
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
});
