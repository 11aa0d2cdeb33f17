/** The ports the peers helper hands out when test files run side by side in mocha's workers. */
import { expect } from 'chai';
import { portSlice } from './peers.js';

describe('test helpers: peer ports per mocha worker', () => {
  it('gives each of four workers its own part of the range, a Redis Cluster bus port (+10000) included', () => {
    const slices = [0, 1, 2, 3].map((id) => portSlice(String(id)));
    for (const [i, slice] of slices.entries()) {
      expect(slice.from, `worker ${String(i)}`).to.be.at.least(10_240);
      expect(slice.to + 10_000, `worker ${String(i)}`).to.be.below(32_768);
      expect(slice.to - slice.from, `worker ${String(i)}`).to.be.at.least(3_000);
      const next = slices[i + 1];
      if (next !== undefined) expect(slice.to, `worker ${String(i)}`).to.be.below(next.from);
    }
    expect(portSlice('5')).to.deep.equal(portSlice('1'));
  });

  it('uses the whole range outside a worker, or when the worker id is not a number', () => {
    for (const id of [undefined, '', 'x', '-1', '1.5']) expect(portSlice(id), String(id)).to.deep.equal({ from: 10_240, to: 22_767 });
  });
});
