/**
 * The token buckets of the state contract (StateBackend.takeToken), run against each backend:
 * memory, one Redis and Cluster. Time is the caller's `nowMs`, so refill is tested without waiting.
 */
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import type { StateBackend } from '../../src/state/state.js';

const T0 = 1_700_000_000_000;

export function runTokenBucketSuite(name: string, open: () => Promise<StateBackend>): void {
  describe(`state backend token buckets: ${name}`, function () {
    let state: StateBackend;
    let key = '';

    beforeEach(async function () {
      key = `test:bucket:${randomUUID()}`;
      state = await open();
    });
    afterEach(async function () {
      await state.close();
    });

    it('allows a full burst at once, then refuses with the wait for the next token', async function () {
      const rate = { perSecond: 4, burst: 3 };
      const answers = [];
      for (let i = 0; i < 4; i++) answers.push(await state.takeToken(key, rate, T0));
      expect(answers).to.deep.equal([
        { allowed: true, retryAfterMs: 0 },
        { allowed: true, retryAfterMs: 0 },
        { allowed: true, retryAfterMs: 0 },
        { allowed: false, retryAfterMs: 250 },
      ]);
      expect(await state.takeToken(key, rate, T0 + 100)).to.deep.equal({ allowed: false, retryAfterMs: 150 });
    });

    it('refills at the rate, never above the burst', async function () {
      const rate = { perSecond: 10, burst: 2 };
      await state.takeToken(key, rate, T0);
      await state.takeToken(key, rate, T0);
      expect((await state.takeToken(key, rate, T0)).allowed).to.equal(false);
      expect((await state.takeToken(key, rate, T0 + 100)).allowed).to.equal(true);
      expect((await state.takeToken(key, rate, T0 + 100)).allowed).to.equal(false);
      // An hour idle gives back two tokens, not 36,000.
      let allowed = 0;
      for (let i = 0; i < 5; i++) if ((await state.takeToken(key, rate, T0 + 3_600_000)).allowed) allowed++;
      expect(allowed).to.equal(2);
    });

    it('keeps one bucket per key, and a clock behind the last call refills nothing', async function () {
      const rate = { perSecond: 1, burst: 1 };
      expect((await state.takeToken(key, rate, T0)).allowed).to.equal(true);
      expect((await state.takeToken(`${key}:other`, rate, T0)).allowed).to.equal(true);
      expect((await state.takeToken(key, rate, T0 - 5_000)).allowed).to.equal(false);
      expect(await state.takeToken(key, rate, T0 + 500)).to.deep.equal({ allowed: false, retryAfterMs: 500 });
    });

    it('gives each token once when many take at the same time', async function () {
      const rate = { perSecond: 1, burst: 20 };
      const answers = await Promise.all(Array.from({ length: 50 }, () => state.takeToken(key, rate, T0)));
      expect(answers.filter((a) => a.allowed)).to.have.length(20);
    });

    it('refuses a rate that is not one, before touching the bucket', async function () {
      for (const rate of [{ perSecond: 0, burst: 1 }, { perSecond: 1, burst: 0 }, { perSecond: 1, burst: 1.5 }, { perSecond: Number.NaN, burst: 1 }]) {
        let failure: unknown;
        await state.takeToken(key, rate, T0).catch((err: unknown) => (failure = err));
        expect(failure, JSON.stringify(rate)).to.be.instanceOf(RangeError);
      }
    });
  });
}
