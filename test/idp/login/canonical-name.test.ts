/**
 * The one spelling the password form's failure window is keyed on (src/idp/login/canonical-name.ts):
 * at least as loose as a directory's comparison, never looser than folding.
 */
import { expect } from 'chai';
import { canonicalUsername } from '../../../src/idp/login/canonical-name.js';

describe('idp: the canonical username', () => {
  it('folds case, surrounding and repeated white space, invisible characters and compatibility forms to one spelling', () => {
    const spellings = ['bob', 'Bob', 'BOB', ' bob', 'bob ', '\tbob\n', '\u00a0bob', 'b\u200bob', 'b\u00adob', '\ufeffbob', 'ｂｏｂ', 'ＢＯＢ'];
    for (const spelling of spellings) expect(canonicalUsername(spelling), JSON.stringify(spelling)).to.equal('bob');
    expect(canonicalUsername('Mary  Ann')).to.equal('mary ann');
    expect(canonicalUsername(' Mary \t Ann ')).to.equal('mary ann');
  });

  it('folds as full case folding does, so a name has one key whichever case maps it', () => {
    expect(canonicalUsername('Straße')).to.equal(canonicalUsername('STRASSE'));
  });

  it('keeps apart what a directory keeps apart: other letters, inner space, punctuation', () => {
    const names = ['bob', 'bobby', 'bo b', 'bob.smith', 'bob-smith', 'b0b'];
    expect(new Set(names.map(canonicalUsername)).size).to.equal(names.length);
  });
});
