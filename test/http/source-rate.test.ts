/** The per-source request rate of unauthenticated endpoints (src/http/source-rate.ts). */
import { expect } from 'chai';
import { createSourceRate } from '../../src/http/source-rate.js';

describe('source rate', function () {
  it('refuses a source past its burst until a token is back, and never another source for it', function () {
    let clock = 1_000_000;
    const rate = createSourceRate({ perSecond: 2, burst: 3 }, () => clock);
    expect([1, 2, 3].map(() => rate.take('192.0.2.1'))).to.deep.equal([0, 0, 0]);
    expect(rate.take('192.0.2.1')).to.equal(500);
    expect(rate.take('192.0.2.2')).to.equal(0);
    clock += 500;
    expect(rate.take('192.0.2.1')).to.equal(0);
    expect(rate.take('192.0.2.1')).to.equal(500);
  });
});
