/**
 * The byte budgets of the state contract (StateBackend.charge/release), run against each
 * backend: memory, one Redis, Sentinel and Cluster. Each test uses a budget of its own, so a
 * shared Redis needs no flush; time is the caller's `nowMs`, so expiry is tested without waiting.
 */
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import type { BudgetLimits, StateBackend } from '../../src/state/state.js';

const LIMITS: BudgetLimits = { perSourceBytes: 1_000, totalBytes: 2_500 };
const T0 = 1_700_000_000_000;

export function runBudgetSuite(name: string, open: () => Promise<StateBackend>): void {
  describe(`state backend byte budgets: ${name}`, function () {
    let state: StateBackend;
    let budget = '';
    const charge = (member: string, source: string, bytes: number, nowMs = T0, untilMs = T0 + 60_000, limits = LIMITS) =>
      state.charge(budget, { member, source, bytes, untilMs }, limits, nowMs);

    beforeEach(async function () {
      budget = `test:budget:${randomUUID()}`;
      state = await open();
    });
    afterEach(async function () {
      await state.close();
    });

    it('admits a source up to its bound, then refuses only that source, naming the bound and what it holds', async function () {
      expect(await charge('a1', '10.0.0.1', 600)).to.deep.equal({ admitted: true, as: 'new' });
      expect(await charge('a2', '10.0.0.1', 400)).to.deep.equal({ admitted: true, as: 'new' });
      expect(await charge('a3', '10.0.0.1', 1)).to.deep.equal({ admitted: false, bound: 'source', heldBytes: 1_000 });
      expect(await charge('b1', '10.0.0.2', 1_000)).to.deep.equal({ admitted: true, as: 'new' });
    });

    it('refuses every source past the total, and a released charge makes room at once', async function () {
      expect((await charge('a', 's1', 1_000)).admitted).to.equal(true);
      expect((await charge('b', 's2', 1_000)).admitted).to.equal(true);
      expect(await charge('c', 's3', 501)).to.deep.equal({ admitted: false, bound: 'total', heldBytes: 2_000 });
      await state.release(budget, 'a');
      expect(await charge('c', 's3', 501)).to.deep.equal({ admitted: true, as: 'new' });
      expect((await charge('a2', 's1', 1_000)).admitted, 'total again').to.equal(false);
      await state.release(budget, 'never-charged');
    });

    it('renews a member charged before without bounding it again, keeping its source', async function () {
      expect((await charge('m', 's1', 900)).admitted).to.equal(true);
      expect(await charge('m', 'another', 1_000)).to.deep.equal({ admitted: true, as: 'renewed' });
      // s1 now holds the renewed 1,000 bytes; `another` holds nothing.
      expect(await charge('x', 's1', 1)).to.deep.equal({ admitted: false, bound: 'source', heldBytes: 1_000 });
      expect(await charge('y', 'another', 1_000)).to.deep.equal({ admitted: true, as: 'new' });
      await state.release(budget, 'm');
      expect((await charge('x', 's1', 1_000)).admitted).to.equal(true);
    });

    it('gives a charge back at its expiry, without a release', async function () {
      expect((await charge('a', 's1', 1_000, T0, T0 + 10_000)).admitted).to.equal(true);
      expect((await charge('b', 's1', 1, T0 + 9_999)).admitted).to.equal(false);
      expect(await charge('b', 's1', 1_000, T0 + 10_000, T0 + 20_000)).to.deep.equal({ admitted: true, as: 'new' });
      // An expired member charged again is new, and bounded.
      expect(await charge('a', 's1', 1, T0 + 10_001, T0 + 30_000)).to.deep.equal({ admitted: false, bound: 'source', heldBytes: 1_000 });
    });

    it('never lets concurrent charges of one source pass its bound together', async function () {
      const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => charge(`m${i}`, 's1', 100)));
      expect(answers.filter((a) => a.admitted)).to.have.length(10);
    });

    it('counts two replicas\' charges under one bound, and a release on one frees room on the other', async function () {
      const other = await open();
      try {
        const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => (i % 2 === 0 ? state : other).charge(budget, { member: `r${i}`, source: 's1', bytes: 100, untilMs: T0 + 60_000 }, LIMITS, T0)));
        expect(answers.filter((a) => a.admitted)).to.have.length(10);
        const admitted = answers.findIndex((a) => a.admitted);
        await other.release(budget, `r${admitted}`);
        expect((await charge('again', 's1', 100)).admitted).to.equal(true);
      } finally {
        await other.close();
      }
    });

    it('rejects a budget name with a brace and a size that is not a positive integer', async function () {
      for (const bad of [() => state.charge('a{b}', { member: 'm', source: 's', bytes: 1, untilMs: T0 }, LIMITS, T0),
        () => charge('m', 's', 0), () => charge('m', 's', 1.5)]) {
        expect(await bad().catch((e: unknown) => e)).to.be.instanceOf(RangeError);
      }
    });
  });
}
