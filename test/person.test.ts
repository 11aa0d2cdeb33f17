/**
 * The person key (src/person.ts): one key per person, derived from the principal's kind, never
 * from how a name looks, and never shared by two persons whatever a `sub` holds.
 */
import { expect } from 'chai';
import { localPerson, parsePersonKey, personKey, personOf, ssoPerson, workloadPerson, type Person } from '../src/person.js';
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

  it('parses only keys personKey writes', function () {
    for (const text of ['alice', 'sso:https://idp.example:alice', 'sso:a:b:c', 'user:svc:alice', 'local:idp:alice', 'workload:svc:x', 'sso:%3a:alice', 'sso:%u00:a', 'sso:%zz:a', 'sso:a:%41']) {
      expect(parsePersonKey(text), text).to.equal(undefined);
    }
  });
});
