/** RFC 4515 escaping of values in LDAP filters: once, and only the five characters that need it. */
import { expect } from 'chai';
import fc from 'fast-check';
import { escapeFilterValue, matchFilter } from '../../../connectors/ldap/filter.js';

describe('ldap filter values', () => {
  it('escapes * ( ) \\ and NUL as \\XX, and nothing else', () => {
    expect(escapeFilterValue('*)(uid=*')).to.equal('\\2a\\29\\28uid=\\2a');
    expect(escapeFilterValue('a\\b')).to.equal('a\\5cb');
    expect(escapeFilterValue('\0')).to.equal('\\00');
    expect(escapeFilterValue('\\2a')).to.equal('\\5c2a');
    expect(escapeFilterValue('zoë & co = ok')).to.equal('zoë & co = ok');
  });

  it('leaves no special character unescaped, whatever the input', () => {
    const alphabet = fc.constantFrom('*', '(', ')', '\\', '\0', 'a', '=', 'ë', '2', 'f');
    fc.assert(fc.property(fc.string({ unit: alphabet }), (value) => {
      const escaped = escapeFilterValue(value);
      // Every backslash starts an escape of two hex digits, and no special character is left bare.
      return !/[*()\0]/.test(escaped) && !escaped.replace(/\\[0-9a-f]{2}/g, '').includes('\\');
    }));
  });

  it('ANDs the configured filter with the escaped match, or uses the match alone', () => {
    expect(matchFilter('(objectClass=person)', 'uid', 'a*')).to.equal('(&(objectClass=person)(uid=a\\2a))');
    expect(matchFilter(' (objectClass=person) ', 'uid', 'a')).to.equal('(&(objectClass=person)(uid=a))');
    expect(matchFilter(undefined, 'member', 'cn=x\\, y,dc=org')).to.equal('(member=cn=x\\5c, y,dc=org)');
  });
});
