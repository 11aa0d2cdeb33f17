import { expect } from 'chai';
import fc from 'fast-check';
import { detachedString } from '../../src/lib/detached-string.js';
import { heapAfterGc } from '../helpers/heap.js';

describe('lib/detached-string', () => {
  it('is the same string, lone surrogates and all', () => {
    fc.assert(fc.property(fc.string({ unit: 'binary' }), (text) => detachedString(text) === text), { seed: 41, numRuns: 500 });
    expect(detachedString('\uD800x\uDFFF')).to.equal('\uD800x\uDFFF');
  });

  it('does not keep the text it was cut from', () => {
    const parents = 20;
    const before = heapAfterGc();
    const kept = Array.from({ length: parents }, (_, i) => detachedString(`${String(i).padStart(4, '0')}${'x'.repeat(512 * 1024)}`.slice(0, 40)));
    const grown = heapAfterGc() - before;
    expect(kept).to.have.length(parents);
    // Kept as views, the 20 slices would hold 10 MB of parents.
    expect(grown, `the heap grew ${Math.round(grown / 1024)} kB`).to.be.below(1024 * 1024);
  });
});
