/** Each account's TOTP steps are accepted once, in order, on a shared state backend. */
import { expect } from 'chai';
import { claimTotpStep } from '../../src/second-factor/totp-replay.js';
import { createMemoryState } from '../../src/state/memory.js';

describe('second-factor/totp-replay', () => {
  it('accepts a step once, refuses it and every earlier step after, and keeps accounts apart', async () => {
    const state = createMemoryState();
    expect(await claimTotpStep(state, 'alice', 100)).to.equal(true);
    expect(await claimTotpStep(state, 'alice', 100)).to.equal(false);
    expect(await claimTotpStep(state, 'alice', 99)).to.equal(false);
    expect(await claimTotpStep(state, 'bob', 100)).to.equal(true);
    expect(await claimTotpStep(state, 'alice', 101)).to.equal(true);
  });

  it('of concurrent claims of one step, exactly one wins', async () => {
    const state = createMemoryState();
    const results = await Promise.all(Array.from({ length: 8 }, () => claimTotpStep(state, 'alice', 7)));
    expect(results.filter(Boolean)).to.have.length(1);
  });
});
