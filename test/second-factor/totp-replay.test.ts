/** Each account's TOTP steps are accepted once, in order, on a shared state backend, and never again after that state is lost. */
import { expect } from 'chai';
import { claimTotpStep } from '../../src/second-factor/totp-replay.js';
import { MARKER_FIELD, REVOKED_HASH } from '../../src/session/revocation.js';
import { CLOCK_SKEW_MS, formatMarker } from '../../src/session/revocations-epoch.js';
import { createMemoryState } from '../../src/state/memory.js';
import type { StateBackend } from '../../src/state/state.js';
import { stateWithRecord } from './fakes.js';

const STEP_MS = 30_000;
const ID = '0f8fad5b-d9cb-469f-a165-70867728950e';

/** The marker a replica writes when it finds the record of revocations (and of used steps) gone. */
async function recordBegins(state: StateBackend, atMs: number): Promise<void> {
  await state.hashSet(REVOKED_HASH, MARKER_FIELD, formatMarker({ id: ID, atMs }));
}

describe('second-factor/totp-replay', () => {
  it('accepts a step once, refuses it and every earlier step after, and keeps accounts apart', async () => {
    const state = stateWithRecord();
    expect(await claimTotpStep(state, 'alice', 100)).to.equal(true);
    expect(await claimTotpStep(state, 'alice', 100)).to.equal(false);
    expect(await claimTotpStep(state, 'alice', 99)).to.equal(false);
    expect(await claimTotpStep(state, 'bob', 100)).to.equal(true);
    expect(await claimTotpStep(state, 'alice', 101)).to.equal(true);
  });

  it('of concurrent claims of one step, exactly one wins', async () => {
    const state = stateWithRecord();
    const results = await Promise.all(Array.from({ length: 8 }, () => claimTotpStep(state, 'alice', 7)));
    expect(results.filter(Boolean)).to.have.length(1);
  });

  it('a code used before the state was lost is refused after it, and the next step\'s code is accepted', async () => {
    const step = 59_000_000; // a step of 2026
    const usedAt = step * STEP_MS + 10_000;
    const before = stateWithRecord();
    expect(await claimTotpStep(before, 'alice', step, usedAt)).to.equal(true);
    // Memory state restarted (or Redis emptied): nothing of the use is left; the new record begins now.
    const after = createMemoryState();
    const lostAt = usedAt + 5_000;
    await recordBegins(after, lostAt);
    expect(await claimTotpStep(after, 'alice', step, lostAt + 1_000), 'the same code').to.equal(false);
    // The next step's code was accepted already during the step of the loss (the skew): refused too.
    expect(await claimTotpStep(after, 'alice', step + 1, (step + 1) * STEP_MS), 'the next step\'s code').to.equal(false);
    expect(await claimTotpStep(after, 'alice', step + 2, (step + 1) * STEP_MS), 'the code of the step after, early by the skew').to.equal(true);
  });

  it('a code of the next step, used early (an authenticator ahead) before the state was lost in the same step, is refused after it', async () => {
    const step = 59_000_000;
    const usedAt = step * STEP_MS + 20_000;
    const before = stateWithRecord();
    expect(await claimTotpStep(before, 'alice', step + 1, usedAt), 'accepted within the skew').to.equal(true);
    const after = createMemoryState();
    const lostAt = usedAt + 2_000;
    await recordBegins(after, lostAt);
    expect(await claimTotpStep(after, 'alice', step + 1, lostAt + 1_000), 'replayed in the same step').to.equal(false);
    expect(await claimTotpStep(after, 'alice', step + 1, (step + 1) * STEP_MS + 1_000), 'replayed in its own step').to.equal(false);
  });

  it('no marker yet (state lost, no replica has written a new one): every step whose code was accepted by now is refused', async () => {
    const state = createMemoryState();
    const now = 59_000_000 * STEP_MS + 10_000;
    expect(await claimTotpStep(state, 'alice', 59_000_000, now)).to.equal(false);
    expect(await claimTotpStep(state, 'alice', 59_000_001, now), 'the next step: accepted by now already, within the skew').to.equal(false);
    expect(await claimTotpStep(state, 'bob', 59_000_000), 'an enrolment\'s confirmation (no time given): its secret is new').to.equal(true);
  });

  it('on a shared backend, a step begun within the clock margin after the marker is refused too', async () => {
    const memory = createMemoryState();
    const shared = new Proxy(memory, { get: (target, prop, receiver) => (prop === 'kind' ? 'redis' : Reflect.get(target, prop, receiver) as unknown) });
    const step = 59_000_000;
    await recordBegins(shared, step * STEP_MS - CLOCK_SKEW_MS + 1);
    expect(await claimTotpStep(shared, 'alice', step, step * STEP_MS + 1)).to.equal(false);
    expect(await claimTotpStep(shared, 'alice', step + 1, (step + 1) * STEP_MS)).to.equal(false);
    expect(await claimTotpStep(shared, 'alice', step + 2, (step + 1) * STEP_MS)).to.equal(true);
  });
});
