import { expect } from 'chai';
import { innermostCause } from '../../src/lib/error-cause.js';

describe('innermostCause', function () {
  it('follows Error causes down to the one that has none', function () {
    const socket = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:389'), { code: 'ECONNREFUSED' });
    expect(innermostCause(new Error('fetch failed', { cause: new Error('undici', { cause: socket }) }))).to.equal(socket);
  });

  it('is the error itself without a cause, and the value itself when it is no Error', function () {
    const alone = new Error('alone');
    expect(innermostCause(alone)).to.equal(alone);
    expect(innermostCause('text')).to.equal('text');
  });

  it('does not follow a cause that is no Error (a response body)', function () {
    const outer = new Error('bad response', { cause: { body: 'secret-ish body' } });
    expect(innermostCause(outer)).to.equal(outer);
  });

  it('ends on a cycle of causes', function () {
    const a = new Error('a');
    const b = new Error('b', { cause: a });
    a.cause = b;
    expect([a, b]).to.include(innermostCause(a));
  });
});
