import { expect } from 'chai';
import { createCipheriv, createDecipheriv, createSecretKey } from 'node:crypto';
import { costRatio } from '../helpers/cpu-cost.js';
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

describe('sealed values: cost', () => {
  it('seal and open at about the cost of the cipher with a key object: the derived key is not handed over raw at every call', function () {
    this.timeout(30_000);
    const sealer = createSealer('key-one-0123456789', 'idp-account');
    const plain = JSON.stringify({ connectorId: 'corp', identity: { userId: 'u'.repeat(40), groups: ['g'.repeat(200)] } });
    const key = createSecretKey(Buffer.alloc(32, 7));
    const iv = Buffer.alloc(12, 1);
    const sealed = sealer.seal(plain, 'sub');
    // The reference: AES-256-GCM both ways over the same sizes with a key object.
    const reference = () => {
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      const decipher = createDecipheriv('aes-256-gcm', key, iv).setAuthTag(cipher.getAuthTag());
      decipher.update(Buffer.from(sealed, 'base64url'));
      try {
        decipher.final();
      } catch {
        // another text under the same tag: refused, as expected
      }
    };
    // A raw key cost about 4.6 times the reference on Node 24 (two thrown errors per call).
    expect(costRatio(() => sealer.open(sealer.seal(plain, 'sub'), 'sub'), reference)).to.be.below(2);
  });
});
