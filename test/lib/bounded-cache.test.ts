import { expect } from 'chai';
import fc from 'fast-check';
import { BoundedCache } from '../../src/lib/bounded-cache.js';

describe('BoundedCache', () => {
  it('never holds more than its bound, whatever the keys', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 50 }), fc.array(fc.integer({ min: 0, max: 200 }), { maxLength: 500 }), (max, keys) => {
        const cache = new BoundedCache<number, number>(max);
        for (const k of keys) {
          if (cache.get(k) === undefined) cache.set(k, k * 2);
          expect(cache.size).to.be.at.most(Math.max(max, 1));
        }
      }),
      { numRuns: 300 },
    );
  });

  it('returns what was set, and the latest value of a key', () => {
    const cache = new BoundedCache<string, number>(10);
    cache.set('a', 1);
    cache.set('a', 2);
    expect(cache.get('a')).to.equal(2);
    expect(cache.get('b')).to.equal(undefined);
  });

  it('keeps an entry that is read while distinct keys stream past', () => {
    const cache = new BoundedCache<string, number>(100);
    cache.set('hot', 1);
    for (let i = 0; i < 10_000; i++) {
      cache.set(`cold-${i}`, i);
      expect(cache.get('hot'), `after ${i} other keys`).to.equal(1);
    }
    expect(cache.get('cold-0')).to.equal(undefined);
    expect(cache.size).to.be.at.most(100);
  });

  it('with a weight bound, holds no more than that weight however long the keys', () => {
    const cache = new BoundedCache<string, number>(100_000, { weight: { maxWeight: 10_000, weigh: (key) => key.length } });
    for (let i = 0; i < 1000; i++) {
      cache.set(`${i}:`.padEnd(1000, 'x'), i);
      expect(cache.size, `after ${i + 1} keys`).to.be.at.most(10);
      expect(cache.weight).to.be.at.most(10_000);
    }
    cache.set('short', 1);
    expect(cache.get('short')).to.equal(1);
  });

  it('refuses a bound that is not a positive integer', () => {
    expect(() => new BoundedCache(0)).to.throw(RangeError, /positive integer/);
    expect(() => new BoundedCache(1.5)).to.throw(RangeError);
    expect(() => new BoundedCache(10, { idle: { maxIdleMs: 0, now: () => 0 } })).to.throw(RangeError, /maxIdleMs/);
  });

  describe('with an idle bound', () => {
    const MINUTE = 60_000;

    it('holds what was used in the last maxIdleMs under a stream of new keys, far below its bound', () => {
      const clock = { now: 0 };
      const idle = new BoundedCache<number, number>(10_000, { idle: { maxIdleMs: 10 * MINUTE, now: () => clock.now } });
      const countOnly = new BoundedCache<number, number>(10_000);
      // One new key a second for an hour, as tokens of sessions that end arrive.
      for (let second = 0; second < 3600; second++) {
        clock.now = second * 1000;
        idle.set(second, second);
        countOnly.set(second, second);
        expect(idle.size, `at ${second} s`).to.be.at.most(601);
      }
      expect(countOnly.size).to.equal(3600);
      expect(idle.get(3599 - 5 * 60)).to.equal(3599 - 5 * 60);
      expect(idle.get(3599 - 11 * 60)).to.equal(undefined);
    });

    it('keeps an entry read every few minutes, however long it lives', () => {
      const clock = { now: 0 };
      const cache = new BoundedCache<string, number>(10_000, { idle: { maxIdleMs: 10 * MINUTE, now: () => clock.now } });
      cache.set('hot', 1);
      for (let second = 1; second < 4 * 3600; second++) {
        clock.now = second * 1000;
        cache.set(`cold-${second}`, second);
        if (second % 240 === 0) expect(cache.get('hot'), `at ${second} s`).to.equal(1);
      }
    });

    it('turns over only when something is added: reads alone drop nothing', () => {
      const clock = { now: 0 };
      const cache = new BoundedCache<string, number>(10, { idle: { maxIdleMs: MINUTE, now: () => clock.now } });
      cache.set('a', 1);
      clock.now = 60 * MINUTE;
      expect(cache.get('a')).to.equal(1);
      cache.set('b', 2);
      clock.now = 62 * MINUTE;
      cache.set('c', 3);
      expect(cache.get('b')).to.equal(2);
      expect(cache.size).to.be.at.most(3);
    });
  });
});
