import { expect } from 'chai';
import { rbacSubjectsOf, readableNameOf, reservedExternalName, shownName, type DroppedName, type Principal } from '../src/principal.js';

const accounts = new Set(['alice', 'ci-bot']);
const sso = (username: string, groups: readonly string[]): Principal => ({ username, groups, issuer: 'https://idp.example', kind: 'sso', tokenId: 'j', expiresAt: undefined });

describe('principal: names from outside never become a local account or a role', () => {
  it('reserves the role: and workload: prefixes, whatever their case or surrounding blanks', () => {
    for (const name of ['role:admin', 'Role:admin', ' role:readonly', 'ROLE:x', 'workload:ci:repo', '\tWorkload:a:b']) {
      expect(reservedExternalName(name, accounts), name).to.be.a('string').and.match(/^names starting with '(role|workload):' are reserved/);
    }
  });

  it("reserves the built-in admin always and every local account's name", () => {
    expect(reservedExternalName('admin', new Set())).to.equal("it is the name of the built-in local account 'admin'");
    expect(reservedExternalName(' Admin ', new Set())).to.equal("it is the name of the built-in local account 'admin'");
    expect(reservedExternalName('alice', accounts)).to.equal("it is the name of the local account 'alice'");
    expect(reservedExternalName('CI-Bot', accounts)).to.equal("it is the name of the local account 'ci-bot'");
  });

  it('leaves every other name alone, role-like names included', () => {
    for (const name of ['bob', 'admins', 'team-admin', 'roles', 'my-role:admin', 'CgNib2ISBGxkYXA']) {
      expect(reservedExternalName(name, accounts), name).to.equal(undefined);
    }
  });

  it('gives an SSO principal its sub and groups as written, reserved ones left out and reported', () => {
    const dropped: DroppedName[] = [];
    const subjects = rbacSubjectsOf(sso('admin', ['devs', 'role:admin', 'alice', 'Team-A', 'workload:x:y']), accounts, (d) => dropped.push(d));
    expect(subjects).to.deep.equal(['devs', 'Team-A']);
    expect(dropped.map((d) => [d.name, d.as])).to.deep.equal([['admin', 'sub'], ['role:admin', 'group'], ['alice', 'group'], ['workload:x:y', 'group']]);
  });

  it('reads the accounts at each call: an account added after the login drops the sub', () => {
    const names = new Set<string>();
    expect(rbacSubjectsOf(sso('dwho', ['timelords']), names)).to.deep.equal(['dwho', 'timelords']);
    names.add('dwho');
    expect(rbacSubjectsOf(sso('dwho', ['timelords']), names)).to.deep.equal(['timelords']);
  });

  it('keeps a local principal as it is: its name is its account', () => {
    const local: Principal = { username: 'admin', groups: [], issuer: 'svc', kind: 'session', tokenId: 'j', expiresAt: undefined };
    expect(rbacSubjectsOf(local, accounts)).to.deep.equal(['admin']);
    expect(rbacSubjectsOf({ ...local, username: 'alice', kind: 'apiKey' }, accounts)).to.deep.equal(['alice']);
  });

  it('keeps a workload principal\'s name (svc built it) and filters its groups (the issuer wrote them) as an SSO principal\'s', () => {
    const workload: Principal = { username: 'workload:ci:repo:org/app', groups: ['deployers', 'role:admin', 'admin', 'ci-bot', ' Workload:x:y'], issuer: 'https://ci.example', kind: 'workload', tokenId: 'j', expiresAt: 1 };
    const dropped: DroppedName[] = [];
    expect(rbacSubjectsOf(workload, accounts, (d) => dropped.push(d))).to.deep.equal(['workload:ci:repo:org/app', 'deployers']);
    expect(dropped.map((d) => [d.name, d.as])).to.deep.equal([['role:admin', 'group'], ['admin', 'group'], ['ci-bot', 'group'], [' Workload:x:y', 'group']]);
  });

  it('names a role and a workload prefix apart in the reason', () => {
    expect(reservedExternalName('role:x', accounts)).to.equal("names starting with 'role:' are reserved for svc's own roles");
    expect(reservedExternalName('workload:x', accounts)).to.equal("names starting with 'workload:' are reserved for svc's own workload identities");
  });

  it('reads the readable name as preferred_username, else email, else name, trimmed, skipping blanks and non-strings', () => {
    expect(readableNameOf({ preferred_username: ' dwho ', email: 'd@w.ho', name: 'Doctor' })).to.equal('dwho');
    expect(readableNameOf({ preferred_username: '  ', email: 'd@w.ho', name: 'Doctor' })).to.equal('d@w.ho');
    expect(readableNameOf({ preferred_username: 7, email: '', name: ' Doctor Who ' })).to.equal('Doctor Who');
    expect(readableNameOf({ sub: 'x', name: ['a'] })).to.equal(undefined);
  });

  it('shows the readable name, else the username', () => {
    const p = sso('sub-1', []);
    expect(shownName(p)).to.equal('sub-1');
    expect(shownName({ ...p, displayName: 'Dana' })).to.equal('Dana');
  });
});
