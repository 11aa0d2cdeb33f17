/**
 * The person key (src/person.ts): one key per person, derived from the principal's kind, never
 * from how a name looks, and never shared by two persons whatever a `sub` holds.
 */
import { expect } from 'chai';
import { localPerson, parsePersonKey, personKey, personOf, samePerson, ssoPerson, workloadPerson, type Person } from '../src/person.js';
import type { Principal } from '../src/principal.js';

const principal = (over: Partial<Principal>): Principal => ({ username: 'alice', groups: [], issuer: 'svc', kind: 'session', tokenId: 't', expiresAt: undefined, ...over });

describe('person', function () {
  it('derives the person from the principal\'s kind', function () {
    expect(personOf(principal({}))).to.deep.equal(localPerson('alice'));
    expect(personOf(principal({ kind: 'apiKey' }))).to.deep.equal(localPerson('alice'));
    expect(personOf(principal({ kind: 'sso', issuer: 'https://idp.example' }))).to.deep.equal(ssoPerson('https://idp.example', 'alice'));
    expect(personOf(principal({ kind: 'ssoApiKey', issuer: 'https://idp.example' }))).to.deep.equal(ssoPerson('https://idp.example', 'alice'));
    expect(personOf(principal({ kind: 'workload', username: 'workload:ci:repo', issuer: 'https://token.actions.example' }))).to.deep.equal(workloadPerson('workload:ci:repo'));
    // A local principal is svc's whatever issuer it carries; an SSO one never is.
    expect(personOf(principal({ issuer: 'https://idp.example' }))).to.deep.equal(localPerson('alice'));
    expect(personOf(principal({ kind: 'sso', issuer: 'svc' }))).to.deep.equal(ssoPerson('svc', 'alice'));
  });

  it('gives every person a key of their own: local, each provider\'s SSO user, a workload, crafted subs', function () {
    const persons: Person[] = [
      localPerson('alice'),
      ssoPerson('https://idp.example', 'alice'),
      ssoPerson('https://other.example', 'alice'),
      ssoPerson('svc', 'alice'),
      workloadPerson('alice'),
      ssoPerson('https://idp.example', 'local:svc:alice'),
      ssoPerson('https://idp.example:alice', ''),
      ssoPerson('https://idp.example', ':alice'),
      ssoPerson('https://idp.example%3Aalice', ''),
      ssoPerson('https://idp.example', 'al%69ce'),
      ssoPerson('https://idp.example', '{alice}'),
      ssoPerson('https://idp.example', '\ud800'),
      ssoPerson('https://idp.example', '\u0100'),
      ssoPerson('https://idp.example', '%u0100'),
    ];
    const keys = persons.map(personKey);
    expect(new Set(keys).size).to.equal(persons.length);
    expect(personKey(localPerson('alice'))).to.equal('local:svc:alice');
    expect(personKey(ssoPerson('https://idp.example', 'alice'))).to.equal('sso:https%3A%2F%2Fidp.example:alice');
    for (const key of keys) expect(key).to.not.match(/[{}\s]/);
    persons.forEach((p, i) => expect(parsePersonKey(keys[i] ?? ''), keys[i]).to.deep.equal(p));
  });

  it('writes every escape in one exact form: upper-case hex, zero-padded to two or four digits', function () {
    const subject = '\u0000\u0001\u000f\u0010 %:{}\u00e9\u00ff\u0100\u0fff\uffffu0100A';
    const key = 'sso:svc:%00%01%0F%10%20%25%3A%7B%7D%E9%FF%u0100%u0FFF%uFFFFu0100A';
    expect(personKey(ssoPerson('svc', subject))).to.equal(key);
    expect(parsePersonKey(key)).to.deep.equal(ssoPerson('svc', subject));
    // A wide escape followed by hex digits written as themselves: the escape takes four, no more.
    expect(personKey(ssoPerson('svc', '\u01000A'))).to.equal('sso:svc:%u01000A');
    expect(parsePersonKey('sso:svc:%u01000A')).to.deep.equal(ssoPerson('svc', '\u01000A'));
    expect(parsePersonKey('sso:%41%u0100B:%7E')).to.equal(undefined);
    expect(parsePersonKey('sso:%2541:%7E7E')).to.equal(undefined);
    expect(parsePersonKey('sso:%2541:~7E')).to.deep.equal(ssoPerson('%41', '~7E'));
    expect(parsePersonKey('sso::')).to.deep.equal(ssoPerson('', ''));
  });

  it('parses only keys personKey writes', function () {
    const refused = [
      // part counts
      '', 'alice', 'sso', 'sso:a', 'sso:a:b:c', 'sso:https://idp.example:alice', '::', ':::',
      // types
      'user:svc:alice', 'Local:svc:alice', 'SSO:a:b', ':svc:alice', 'local%20:svc:alice', 'lo%63al:svc:alice',
      // issuers of local and workload keys
      'local:idp:alice', 'local::alice', 'local:svc%20:alice', 'local:%73vc:alice', 'workload:svc:x', 'workload:svc%3AWorkload:x', 'workload:svc:workload:x', 'workload:local:x',
      // characters that must have been escaped
      'sso:a:b c', 'sso:a:b/c', 'sso:a:{b}', 'sso:a:\u00e9', 'sso:a:\u0100', 'sso:a:b\u0000',
      // escapes of characters that are written as themselves
      'sso:a:%41', 'sso:%61:b', 'sso:a:%7E', 'sso:a:%2D', 'sso:a:%u0041', 'sso:a:%u00E9', 'sso:a:%u00FF',
      // lower-case, non-hex and short escapes, in the issuer and in the subject
      'sso:%3a:alice', 'sso:a:%3a', 'sso:a:%e9', 'sso:a:%u0fff', 'sso:a:%u0Fff', 'sso:%zz:a', 'sso:a:%zz', 'sso:a:%G0', 'sso:a:%0G',
      'sso:a:%', 'sso:a:b%', 'sso:a:%4', 'sso:a:b%4', 'sso:%4:a', 'sso:a:%-1', 'sso:a:%+1', 'sso:a:% 1', 'sso:a:%%41',
      // wide escapes with too few digits, or digits that are not upper-case hex
      'sso:a:%u', 'sso:%u:a', 'sso:a:%u1', 'sso:a:%u100', 'sso:%u100:a', 'sso:%u00:a', 'sso:a:%u10G0', 'sso:a:%u-100', 'sso:a:%U0100',
      'sso:a:%u0100%u100', 'sso:a:%u100%41',
    ];
    for (const text of refused) expect(parsePersonKey(text), JSON.stringify(text)).to.equal(undefined);
  });

  it('takes two persons as the same only when type, issuer and subject all match', function () {
    const alice = ssoPerson('https://idp.example', 'alice');
    expect(samePerson(alice, ssoPerson('https://idp.example', 'alice'))).to.equal(true);
    expect(samePerson(localPerson('alice'), localPerson('alice'))).to.equal(true);
    expect(samePerson(alice, ssoPerson('https://idp.example', 'bob'))).to.equal(false);
    expect(samePerson(alice, ssoPerson('https://other.example', 'alice'))).to.equal(false);
    expect(samePerson(ssoPerson('svc', 'alice'), localPerson('alice'))).to.equal(false);
    expect(samePerson(ssoPerson('svc:workload', 'alice'), workloadPerson('alice'))).to.equal(false);
    expect(samePerson(localPerson('alice'), workloadPerson('bob'))).to.equal(false);
  });
});
