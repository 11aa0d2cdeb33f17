import { expect } from 'chai';
import { pino } from 'pino';
import { createMemoryState } from '../../src/state/memory.js';
import type { StateBackend } from '../../src/state/state.js';
import { runBudgetSuite } from './budget-suite.js';
import { runStateSuite } from './state-suite.js';
import { runTokenBucketSuite } from './token-bucket-suite.js';

const log = pino({ level: 'silent' });

describe('state: memory', function () {
  let store: StateBackend;
  beforeEach(function () {
    store = createMemoryState({ log });
  });

  // One store per test: both "clients" of a test are the same in-process backend.
  runStateSuite('memory', { open: async () => store });
  // Both "replicas" of a budget test are one in-process backend, as above.
  describe('with one store per test', function () {
    let shared: StateBackend;
    beforeEach(function () {
      shared = createMemoryState({ log });
    });
    const view = (): StateBackend => ({ ...shared, close: async () => undefined });
    afterEach(() => shared.close());
    runBudgetSuite('memory', async () => view());
    runTokenBucketSuite('memory', async () => view());
  });

  describe('with an injected clock', function () {
    let now = 1_000_000;
    const clock = () => now;

    it('expires exactly at the TTL, by the clock it was given', async function () {
      const state = createMemoryState({ now: clock, log });
      await state.set('k', 'v', { ttlMs: 1_000 });
      await state.incr('c', { ttlMs: 1_000 });
      now += 999;
      expect(await state.get('k')).to.equal('v');
      expect(await state.ttlMs('c')).to.equal(1);
      now += 1;
      expect(await state.get('k')).to.equal(null);
      expect(await state.incr('c', { ttlMs: 1_000 })).to.equal(1);
      await state.close();
    });

    it('expires hashes exactly by the clock, after expire() or extendTtlMs', async function () {
      const state = createMemoryState({ now: clock, log });
      await state.hashSet('h', 'a', '1', { extendTtlMs: 1_000 });
      await state.hashSet('g', 'a', '1');
      expect(await state.expire('g', 500)).to.equal(true);
      now += 400;
      await state.hashSet('h', 'b', '2', { extendTtlMs: 1_000 }); // raised to 1400 from the start
      expect(await state.ttlMs('h')).to.equal(1_000);
      now += 100;
      expect(await state.hashLength('g')).to.equal(0);
      now += 899;
      expect(await state.hashGetAll('h')).to.deep.equal({ a: '1', b: '2' });
      now += 1;
      expect(await state.hashLength('h')).to.equal(0);
      await state.close();
    });

    it('sweeps expired keys nobody reads', async function () {
      const state = createMemoryState({ now: clock, log, sweepIntervalMs: 10 });
      await state.set('k', 'v', { ttlMs: 5 });
      now += 10;
      await new Promise((resolve) => setTimeout(resolve, 30));
      now -= 10; // back in time: only a sweep can have removed the key
      expect(await state.get('k')).to.equal(null);
      await state.close();
    });
  });
});
