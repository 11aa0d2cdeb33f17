import { expect } from 'chai';
import { AssertionCache, type CachedAssertion } from '../../src/extensions/assertion-cache.js';

const entry = (token: string): CachedAssertion => ({ token, reuseUntil: 1, kid: 'k', issuer: 'https://svc.example' });

describe('extensions/assertion-cache', () => {
  it('keeps at most maxEntries, dropping the oldest first', () => {
    const cache = new AssertionCache({ maxEntries: 3, maxBytes: 1 << 20 });
    for (const name of ['a', 'b', 'c', 'd', 'e']) cache.set(name, entry(`token-${name}`));
    expect(cache.size).to.equal(3);
    expect(['a', 'b', 'c', 'd', 'e'].map((n) => cache.get(n)?.token)).to.deep.equal([undefined, undefined, 'token-c', 'token-d', 'token-e']);
  });

  it('keeps its bytes under maxBytes, dropping the oldest first, whatever the count', () => {
    const cache = new AssertionCache({ maxEntries: 1000, maxBytes: 4096 });
    const big = 'x'.repeat(500); // about 1.1 KB each as JavaScript holds it: three fit, not four
    for (let i = 0; i < 10; i++) cache.set(`caller-${i}`, entry(`${big}${i}`));
    expect(cache.bytes).to.be.at.most(4096);
    expect(cache.size).to.equal(3);
    expect(cache.get('caller-9')?.token).to.equal(`${big}9`);
    expect(cache.get('caller-6')).to.equal(undefined);
  });

  it('replaces an entry in place of adding one, and counts its bytes once', () => {
    const cache = new AssertionCache({ maxEntries: 2, maxBytes: 1 << 20 });
    cache.set('a', entry('one'));
    const bytes = cache.bytes;
    cache.set('a', entry('two'));
    expect(cache.size).to.equal(1);
    expect(cache.bytes).to.equal(bytes);
    expect(cache.get('a')?.token).to.equal('two');
    cache.delete('a');
    expect([cache.size, cache.bytes]).to.deep.equal([0, 0]);
  });

  it('does not keep a value larger than the whole bound (and drops nothing for it)', () => {
    const cache = new AssertionCache({ maxEntries: 10, maxBytes: 1024 });
    cache.set('small', entry('t'));
    cache.set('huge', entry('y'.repeat(2000)));
    expect(cache.get('huge')).to.equal(undefined);
    expect(cache.get('small')?.token).to.equal('t');
  });

  it('refuses bounds below one, naming them', () => {
    expect(() => new AssertionCache({ maxEntries: 0, maxBytes: 10 })).to.throw(RangeError, 'assertion cache: maxEntries (0) and maxBytes (10) must be at least 1');
  });
});
