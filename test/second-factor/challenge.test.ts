/** The login's second-step challenge: single use, at most 5 minutes, bound to its account. */
import { expect } from 'chai';
import { CHALLENGE_TTL_MS, createChallenge, peekChallenge, takeChallenge } from '../../src/second-factor/challenge.js';
import { createMemoryState } from '../../src/state/memory.js';

describe('second-factor/challenge', () => {
  let clock = 1_800_000_000_000;
  const state = createMemoryState({ now: () => clock });

  it('is taken once: the second take finds nothing', async () => {
    const id = await createChallenge(state, { username: 'alice', pwh: 'b1' });
    expect(id).to.match(/^[A-Za-z0-9_-]{43}$/);
    expect(await peekChallenge(state, id)).to.deep.equal({ username: 'alice', pwh: 'b1' });
    expect(await takeChallenge(state, id)).to.deep.equal({ username: 'alice', pwh: 'b1' });
    expect(await takeChallenge(state, id)).to.equal(undefined);
  });

  it('is gone after 5 minutes, and good just before', async () => {
    expect(CHALLENGE_TTL_MS).to.equal(300_000);
    const early = await createChallenge(state, { username: 'alice', pwh: 'b1' });
    const late = await createChallenge(state, { username: 'alice', pwh: 'b1' });
    clock += CHALLENGE_TTL_MS - 1;
    expect(await takeChallenge(state, early)).to.deep.equal({ username: 'alice', pwh: 'b1' });
    clock += 1;
    expect(await takeChallenge(state, late)).to.equal(undefined);
  });

  it('reads nothing for an id of another shape (no key is built from it)', async () => {
    expect(await takeChallenge(state, '../../x')).to.equal(undefined);
    expect(await peekChallenge(state, '')).to.equal(undefined);
  });
});
