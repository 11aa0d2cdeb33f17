/** A replica's leases of shared token buckets: spent one per request, bounded in time, size and number. */
import { expect } from 'chai';
import { LEASE_MS, leaseFor, RateLeases } from '../../src/extensions/rate-leases.js';

const T0 = 1_700_000_000_000;
const limit = { requestsPerSecond: 100, burst: 50 };

describe('extensions/rate-leases', () => {
  it('asks for a tenth of the bucket, at most a second of the rate, at least one token', () => {
    expect(leaseFor({ requestsPerSecond: 100, burst: 50 })).to.deep.equal({ share: 0.1, most: 100 });
    expect(leaseFor({ requestsPerSecond: 0.5, burst: 10 })).to.deep.equal({ share: 0.1, most: 1 });
    expect(leaseFor({ requestsPerSecond: 1_000_000, burst: 1_000_000 })).to.deep.equal({ share: 0.1, most: 1_000_000 });
  });

  it('spends what was leased one token at a time, then has none', () => {
    const leases = new RateLeases(10);
    expect(leases.spend('k', limit, T0)).to.equal(false);
    leases.add('k', limit, 3, T0);
    expect([1, 2, 3, 4].map(() => leases.spend('k', limit, T0 + 1))).to.deep.equal([true, true, true, false]);
    expect(leases.size).to.equal(0);
  });

  it('drops a lease once LEASE_MS have passed since it was taken, and when the limit changed', () => {
    const leases = new RateLeases(10);
    leases.add('k', limit, 5, T0);
    expect(leases.spend('k', limit, T0 + LEASE_MS - 1)).to.equal(true);
    expect(leases.spend('k', limit, T0 + LEASE_MS)).to.equal(false);
    leases.add('k', limit, 5, T0);
    expect(leases.spend('k', { ...limit, burst: 40 }, T0)).to.equal(false);
    expect(leases.spend('k', limit, T0)).to.equal(false);
  });

  it('a new lease replaces what was left, without extending the old tokens\' life', () => {
    const leases = new RateLeases(10);
    leases.add('k', limit, 5, T0);
    leases.add('k', limit, 1, T0 + 500);
    expect(leases.spend('k', limit, T0 + 600)).to.equal(true);
    expect(leases.spend('k', limit, T0 + 600)).to.equal(false);
    leases.add('k', limit, 0, T0);
    expect(leases.size).to.equal(0);
  });

  it('keeps one lease per key and at most `max`, dropping the one idle longest first', () => {
    const leases = new RateLeases(2);
    leases.add('a', limit, 5, T0);
    leases.add('b', limit, 5, T0);
    expect(leases.spend('a', limit, T0)).to.equal(true); // a used since b was added
    leases.add('c', limit, 5, T0);
    expect(leases.size).to.equal(2);
    expect(leases.spend('b', limit, T0)).to.equal(false);
    expect(leases.spend('a', limit, T0)).to.equal(true);
    expect(leases.spend('c', limit, T0)).to.equal(true);
  });
});
