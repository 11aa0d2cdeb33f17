import { expect } from 'chai';
import { createSealer } from '../../src/lib/sealed.js';

describe('sealed values', () => {
  it('open what was sealed with the same key and purpose, and nothing else', () => {
    const sealer = createSealer('key-one-0123456789', 'login-state');
    const sealed = sealer.seal('{"state":"s"}');
    expect(sealed).to.not.include('state');
    expect(sealer.open(sealed)).to.equal('{"state":"s"}');
    expect(createSealer('key-two-0123456789', 'login-state').open(sealed)).to.equal(undefined);
    expect(createSealer('key-one-0123456789', 'refresh-token').open(sealed)).to.equal(undefined);
    const middle = Math.floor(sealed.length / 2);
    const altered = `${sealed.slice(0, middle)}${sealed[middle] === 'A' ? 'B' : 'A'}${sealed.slice(middle + 1)}`;
    expect(sealer.open(altered)).to.equal(undefined);
    expect(sealer.open('')).to.equal(undefined);
    expect(sealer.seal('x')).to.not.equal(sealer.seal('x'));
  });

  it('open a value sealed with a context only with that context', () => {
    const sealer = createSealer('key-one-0123456789', 'idp-account');
    const sealed = sealer.seal('{"user":"root"}', 'sub-root');
    expect(sealer.open(sealed, 'sub-root')).to.equal('{"user":"root"}');
    expect(sealer.open(sealed, 'sub-mallory')).to.equal(undefined);
    expect(sealer.open(sealed)).to.equal(undefined);
    expect(sealer.open(sealer.seal('x'), 'sub-root')).to.equal(undefined);
  });
});
