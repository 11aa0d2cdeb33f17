import { expect } from 'chai';
import fc from 'fast-check';
import { createGlobMatch, GLOB_CACHE_ENTRIES } from '../../src/rbac/glob.js';

/** Literal characters: `/`, regex metacharacters and letters, but no glob syntax. */
const LITERAL_CHARS = [...'ab/-_.+()^$|:ñ'];
const literal = fc.string({ unit: fc.constantFrom(...LITERAL_CHARS), maxLength: 8 });
const anyText = fc.string({ unit: 'binary', maxLength: 10 });

describe('rbac/glob', () => {
  const glob = createGlobMatch();

  it('* matches any run of characters, / included', () => {
    fc.assert(
      fc.property(literal, anyText, literal, (head, middle, tail) => {
        expect(glob(`${head}${middle}${tail}`, `${head}*${tail}`)).to.equal(true);
      }),
    );
    expect(glob('team-a/api', '*/*')).to.equal(true);
    expect(glob('a/b/c', '*')).to.equal(true);
    expect(glob('a/b/c', 'a/*')).to.equal(true);
    expect(glob('team-a', '*/*')).to.equal(false);
    expect(glob('proj/app', '*/ext')).to.equal(false);
  });

  it('a literal pattern matches exactly itself, regex metacharacters included', () => {
    fc.assert(
      fc.property(literal, literal, (pattern, value) => {
        expect(glob(value, pattern)).to.equal(value === pattern);
        expect(glob(pattern, pattern)).to.equal(true);
      }),
    );
    expect(glob('axb', 'a.b')).to.equal(false);
    expect(glob('aab', 'a+b')).to.equal(false);
    expect(glob('a', '(a|b)')).to.equal(false);
    expect(glob('(a|b)', '(a|b)')).to.equal(true);
  });

  it('? matches exactly one character', () => {
    fc.assert(
      fc.property(literal, fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }), literal, (head, one, tail) => {
        expect(glob(`${head}${one}${tail}`, `${head}?${tail}`)).to.equal(true);
        expect(glob(`${head}${tail}`, `${head}?${tail}`)).to.equal(false);
        expect(glob(`${head}${one}${one}${tail}`, `${head}?${tail}`)).to.equal(false);
      }),
    );
  });

  it('{a,b} matches exactly one of the alternatives', () => {
    const noComma = fc.string({ unit: fc.constantFrom(...LITERAL_CHARS), maxLength: 5 });
    fc.assert(
      fc.property(noComma, noComma, literal, (x, y, value) => {
        expect(glob(value, `{${x},${y}}`)).to.equal(value === x || value === y);
      }),
    );
    expect(glob('team-a/api', '{team-a,team-b}/*')).to.equal(true);
    expect(glob('team-c/api', '{team-a,team-b}/*')).to.equal(false);
    expect(glob('x/deploy', '*/{deploy,sync*}')).to.equal(true);
    expect(glob('x/sync-now', '*/{deploy,sync*}')).to.equal(true);
  });

  it('takes an unterminated { or [ literally, and supports classes and escapes', () => {
    expect(glob('{a', '{a')).to.equal(true);
    expect(glob('a', '{a')).to.equal(false);
    expect(glob('[a', '[a')).to.equal(true);
    expect(glob('b1', '[abc]1')).to.equal(true);
    expect(glob('d1', '[!abc]1')).to.equal(true);
    expect(glob('a1', '[!abc]1')).to.equal(false);
    expect(glob('*', '\\*')).to.equal(true);
    expect(glob('x', '\\*')).to.equal(false);
    expect(glob('a', '[z-a]')).to.equal(false);
    expect(glob('[z-a]', '[z-a]')).to.equal(false);
  });

  it('stays fast on values made to make a backtracking matcher explode', () => {
    const value = `${'/'.repeat(20_000)}x`;
    const start = performance.now();
    expect(glob(value, '*/*/*/*/prod')).to.equal(false);
    expect(glob(value, '{*/*/*,*a*b*c}/prod')).to.equal(false);
    expect(glob(`${value}/prod`, '*/*/*/*/prod')).to.equal(true);
    expect(performance.now() - start).to.be.below(500);
  });

  it('expands braces into at most MAX_ALTERNATIVES alternatives, else takes the pattern literally', () => {
    const many = '{a,b}'.repeat(11); // 2048 alternatives
    expect(glob('a'.repeat(11), many)).to.equal(false);
    expect(glob(many, many)).to.equal(true);
    const some = '{a,b}'.repeat(10); // 1024
    expect(glob('ab'.repeat(5), some)).to.equal(true);
  });

  it('keeps its compiled patterns in a bounded cache', () => {
    const small = createGlobMatch(2);
    for (let i = 0; i < 50; i++) expect(small(`p${i}x`, `p${i}*`)).to.equal(true);
    expect(small('p0x', 'p0*')).to.equal(true);
    expect(GLOB_CACHE_ENTRIES).to.equal(10_000);
  });
});
