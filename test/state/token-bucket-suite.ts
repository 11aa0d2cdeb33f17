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

    it('leases a share of the tokens held (at least one, at most `most`) in one step, then refuses with the wait', async function () {
      const rate = { perSecond: 10, burst: 100 };
      // A full bucket of 100: a tenth is 10, capped at 8.
      expect(await state.leaseTokens(key, rate, { share: 0.1, most: 8 }, T0)).to.deep.equal({ granted: 8, retryAfterMs: 0 });
      // 92 left: a tenth is 9.
      expect(await state.leaseTokens(key, rate, { share: 0.1, most: 50 }, T0)).to.deep.equal({ granted: 9, retryAfterMs: 0 });
      // 83 left, the whole of it.
      expect(await state.leaseTokens(key, rate, { share: 1, most: 1000 }, T0)).to.deep.equal({ granted: 83, retryAfterMs: 0 });
      expect(await state.leaseTokens(key, rate, { share: 0.1, most: 8 }, T0)).to.deep.equal({ granted: 0, retryAfterMs: 100 });
      // 250 ms refill 2.5 tokens: a tenth rounds down to 0, yet one token is leased.
      expect(await state.leaseTokens(key, rate, { share: 0.1, most: 8 }, T0 + 250)).to.deep.equal({ granted: 1, retryAfterMs: 0 });
      // A plain take reads the same bucket: 1.5 left.
      expect((await state.takeToken(key, rate, T0 + 250)).allowed).to.equal(true);
      expect((await state.takeToken(key, rate, T0 + 250)).allowed).to.equal(false);
    });

    it('leases to replicas asking at once never more tokens than the bucket holds', async function () {
      const rate = { perSecond: 1, burst: 200 };
      const answers = await Promise.all(Array.from({ length: 60 }, () => state.leaseTokens(key, rate, { share: 0.1, most: 100 }, T0)));
      const granted = answers.reduce((sum, a) => sum + a.granted, 0);
      expect(granted).to.equal(200);
    });

    it('refuses a lease that is not one, before touching the bucket', async function () {
      const rate = { perSecond: 1, burst: 1 };
      for (const lease of [{ share: -0.1, most: 1 }, { share: 1.5, most: 1 }, { share: 0.1, most: 0 }, { share: 0.1, most: 2.5 }, { share: Number.NaN, most: 1 }]) {
        let failure: unknown;
        await state.leaseTokens(key, rate, lease, T0).catch((err: unknown) => (failure = err));
        expect(failure, JSON.stringify(lease)).to.be.instanceOf(RangeError);
      }
      expect((await state.takeToken(key, rate, T0)).allowed).to.equal(true);
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
