/** The bound on pending records (src/idp/storage/pending-bound.ts) on the memory backend, with a pinned clock. */
import { expect } from 'chai';
import { createPendingBound } from '../../../src/idp/storage/pending-bound.js';
import { createMemoryState } from '../../../src/state/memory.js';

describe('idp: the bound on pending records', function () {
  it('admits per client and in total within a window, refuses past either, and admits again once the window has passed', async function () {
    let t = 1_000_000;
    const state = createMemoryState({ now: () => t });
    const bound = createPendingBound(state, 'Interaction', { windowMs: 10_000, perClient: 3, total: 5 }, () => t);
    const admitted = async (client: string, n: number) => {
      let yes = 0;
      for (let i = 0; i < n; i++) if (await bound.admit(client)) yes++;
      return yes;
    };
    expect(await admitted('svc', 5)).to.equal(3);
    t += 4_000;
    expect(await admitted('svc-cli', 5)).to.equal(2);
    expect(await admitted('svc', 1)).to.equal(0);
    expect(await Promise.all(Array.from({ length: 10 }, () => bound.admit('svc-cli')))).to.not.include(true);
    t += 13_000;
    expect(await admitted('svc', 5)).to.equal(3);
    await state.close();
  });
});
