import { expect } from 'chai';
import { canOffline } from '../../src/rbac/offline.js';
import { createEnforcer } from '../../src/rbac/enforcer.js';
import { createRights, type BuildEnforcer } from '../../src/rbac/rights.js';
import { policyOf } from './helpers.js';
import type { Principal } from '../../src/principal.js';

describe('rbac/rights', () => {
  it('drops cached decisions when the policy is updated', async () => {
    const rights = await createRights(policyOf('p, alice, applications, sync, team-a/*'));
    expect(rights.can(['alice'], 'applications', 'sync', 'team-a/api')).to.equal(true);
    expect(rights.can(['alice'], 'applications', 'sync', 'team-a/api')).to.equal(true); // cached now
    await rights.update(policyOf('p, alice, applications, sync, team-a/*\np, alice, applications, sync, team-a/api, deny'));
    expect(rights.can(['alice'], 'applications', 'sync', 'team-a/api')).to.equal(false);
    expect(rights.can(['alice'], 'applications', 'sync', 'team-a/web')).to.equal(true);
    expect(rights.policy.lines).to.have.length(2);
  });

  it('keeps the newest policy when updates finish out of order', async () => {
    // The first update's build is held until the second has finished, so it really lands last.
    let releaseFirst: () => void = () => undefined;
    const firstHeld = new Promise<void>((resolve) => (releaseFirst = resolve));
    let builds = 0;
    const build: BuildEnforcer = async (policy, options) => {
      const mine = ++builds;
      if (mine === 2) await firstHeld;
      return createEnforcer(policy, options);
    };
    const rights = await createRights(policyOf(''), {}, { build });
    const first = rights.update(policyOf('p, a, logs, get, *'));
    const second = rights.update(policyOf('p, b, logs, get, *'));
    await second;
    releaseFirst();
    await first;
    expect(builds).to.equal(3);
    expect(rights.can(['b'], 'logs', 'get', 'x')).to.equal(true);
    expect(rights.can(['a'], 'logs', 'get', 'x')).to.equal(false);
  });

  it('does not rebuild for a new policy object with the same rules, default and scopes', async () => {
    let builds = 0;
    const build: BuildEnforcer = (policy, options) => {
      builds++;
      return createEnforcer(policy, options);
    };
    const rights = await createRights(policyOf('p, a, logs, get, *'), {}, { build });
    await rights.update(policyOf('p, a, logs, get, *'));
    expect(builds).to.equal(1);
    await rights.update(policyOf('p, a, logs, get, *', { defaultRole: 'role:readonly' }));
    await rights.update(policyOf('p, a, logs, get, *', { defaultRole: 'role:readonly', scopes: '[roles]' }));
    expect(builds).to.equal(3);
    expect(rights.policy.scopes).to.deep.equal(['roles']);
  });

  it('tries a policy again after its build failed', async () => {
    let fail = true;
    const build: BuildEnforcer = (policy, options) => {
      if (policy.lines.length > 0 && fail) return Promise.reject(new Error('build failed'));
      return createEnforcer(policy, options);
    };
    const rights = await createRights(policyOf(''), {}, { build });
    let error: unknown;
    await rights.update(policyOf('p, a, logs, get, *')).catch((err: unknown) => (error = err));
    expect((error as Error).message).to.equal('build failed');
    fail = false;
    await rights.update(policyOf('p, a, logs, get, *'));
    expect(rights.can(['a'], 'logs', 'get', 'x')).to.equal(true);
  });

  it('rebuilds when only the narrowing lines change: a bad change that takes access away applies', async () => {
    const open = policyOf('p, a, logs, get, *');
    const rights = await createRights(open);
    expect(rights.can(['a'], 'logs', 'get', 'x')).to.equal(true);
    await rights.update({ ...open, restrictTo: policyOf('p, a, logs, get, y').lines });
    expect(rights.can(['a'], 'logs', 'get', 'x')).to.equal(false);
    expect(rights.can(['a'], 'logs', 'get', 'y')).to.equal(true);
    await rights.update({ ...open, restrictTo: [] });
    expect(rights.can(['a'], 'logs', 'get', 'y')).to.equal(false);
  });

  it('tells each listener once a new policy answers, not for an unchanged one, and no more once it unsubscribed', async () => {
    const rights = await createRights(policyOf(''));
    const heard: string[] = [];
    const stop = rights.onUpdate(() => heard.push(`first:${String(rights.can(['a'], 'logs', 'get', 'x'))}`));
    rights.onUpdate(() => {
      throw new Error('a listener that fails');
    });
    rights.onUpdate(() => heard.push('third'));
    await rights.update(policyOf('p, a, logs, get, *'));
    expect(heard).to.deep.equal(['first:true', 'third']);
    await rights.update(policyOf('p, a, logs, get, *'));
    expect(heard).to.have.length(2);
    expect(stop()).to.equal(true);
    await rights.update(policyOf(''));
    expect(heard).to.deep.equal(['first:true', 'third', 'third']);
  });

  it('after an older update\'s build failed, does not build again the newer policy still being built', async () => {
    let releaseFirst: () => void = () => undefined;
    let releaseSecond: () => void = () => undefined;
    const firstHeld = new Promise<void>((resolve) => (releaseFirst = resolve));
    const secondHeld = new Promise<void>((resolve) => (releaseSecond = resolve));
    const built: string[] = [];
    const build: BuildEnforcer = async (policy, options) => {
      const rules = policy.lines.map((l) => (l.kind === 'p' ? l.sub : l.member)).join();
      built.push(rules);
      if (rules === 'a') {
        await firstHeld;
        throw new Error('build failed');
      }
      if (rules === 'b') await secondHeld;
      return createEnforcer(policy, options);
    };
    const rights = await createRights(policyOf(''), {}, { build });
    const first = rights.update(policyOf('p, a, logs, get, *')).catch((err: unknown) => err);
    const second = rights.update(policyOf('p, b, logs, get, *'));
    releaseFirst();
    expect(((await first) as Error).message).to.equal('build failed');
    const again = rights.update(policyOf('p, b, logs, get, *'));
    releaseSecond();
    await Promise.all([second, again]);
    expect(built).to.deep.equal(['', 'a', 'b']);
    expect(rights.can(['b'], 'logs', 'get', 'x')).to.equal(true);
  });

  it('answers one offline question for a user or a group', async () => {
    const policy = policyOf('g, devs, role:dev\np, role:dev, extensions, post, */metrics\ng, eve, devs');
    expect(await canOffline(policy, 'devs', 'extensions', 'post', 'team-a/metrics')).to.equal(true);
    expect(await canOffline(policy, 'eve', 'extensions', 'post', 'team-a/metrics')).to.equal(true);
    expect(await canOffline(policy, 'eve', 'extensions', 'delete', 'team-a/metrics')).to.equal(false);
    expect(await canOffline(policy, 'mallory', 'extensions', 'post', 'team-a/metrics')).to.equal(false);
    expect(await canOffline(policy, 'admin', 'accounts', 'update', 'eve')).to.equal(true);
  });
});

describe('rbac/rights: allows() applies the naming rule to SSO callers', () => {
  const sso = (username: string, groups: readonly string[]): Principal => ({ username, groups, issuer: 'https://idp.example', kind: 'sso', tokenId: 'j', expiresAt: undefined });
  const local = (username: string): Principal => ({ username, groups: [], issuer: 'svc', kind: 'session', tokenId: 'j', expiresAt: undefined });

  it("the built-in 'g, admin, role:admin' holds for the local admin only, never an SSO sub or group 'admin'", async () => {
    const rights = await createRights(policyOf(''));
    expect(rights.allows(local('admin'), 'applications', 'delete', 'x/y')).to.equal(true);
    expect(rights.allows(sso('admin', []), 'applications', 'delete', 'x/y')).to.equal(false);
    expect(rights.allows(sso('bob', ['admin']), 'applications', 'delete', 'x/y')).to.equal(false);
    expect(rights.allows(sso('bob', ['ADMIN']), 'applications', 'get', 'x/y')).to.equal(false);
  });

  it("a group named 'role:admin' or like a local account grants nothing; Argo CD-style group lines still work", async () => {
    const accounts = new Set(['alice']);
    const rights = await createRights(policyOf('p, alice, logs, get, *\ng, devs, role:readonly\np, carol, clusters, get, *'), {}, { localAccountNames: () => accounts });
    expect(rights.allows(sso('bob', ['role:admin']), 'applications', 'get', 'x/y')).to.equal(false);
    expect(rights.allows(sso('bob', ['role:readonly']), 'applications', 'get', 'x/y')).to.equal(false);
    expect(rights.allows(sso('bob', ['alice']), 'logs', 'get', 'x')).to.equal(false);
    expect(rights.allows(local('alice'), 'logs', 'get', 'x')).to.equal(true);
    expect(rights.allows(sso('bob', ['devs']), 'applications', 'get', 'x/y')).to.equal(true);
    expect(rights.allows(sso('carol', []), 'clusters', 'get', 'c')).to.equal(true);
    // An account added after carol's login takes her sub out at the next request.
    accounts.add('carol');
    expect(rights.allows(sso('carol', []), 'clusters', 'get', 'c')).to.equal(false);
  });

  it('reports each dropped SSO name once per issuer', async () => {
    const reported: string[] = [];
    const rights = await createRights(policyOf(''), {}, { onReserved: (d) => reported.push(`${d.issuer} ${d.as} ${d.name}: ${d.reason}`) });
    rights.allows(sso('bob', ['role:admin']), 'logs', 'get', 'x');
    rights.allows(sso('bob', ['role:admin']), 'logs', 'get', 'y');
    rights.allows({ ...sso('bob', ['role:admin']), issuer: 'https://other.example' }, 'logs', 'get', 'x');
    expect(reported).to.deep.equal([
      "https://idp.example group role:admin: names starting with 'role:' are reserved for svc's own roles",
      "https://other.example group role:admin: names starting with 'role:' are reserved for svc's own roles",
    ]);
  });
  it('explains a refusal with the subjects it asked about and the line or default that decided', async () => {
    const rights = await createRights(policyOf('p, role:dev, logs, get, team-a/*, allow\ng, carol, role:dev'));
    const carol: Principal = { username: 'carol', groups: ['devs'], issuer: 'https://idp.example', kind: 'sso', tokenId: 'j', expiresAt: undefined };
    const explained = rights.explain(carol, 'logs', 'get', 'team-b/x');
    expect(explained.subjects).to.deep.equal(['carol', 'devs']);
    expect(explained.rule).to.equal('default: no line matches the caller and policy.default is not set');
  });

  it('says so when its engine cannot explain a refusal', async () => {
    const build: BuildEnforcer = async (policy) => ({ policy, can: () => false, cached: () => ({ entries: 0, bytes: 0 }) });
    const rights = await createRights(policyOf(''), {}, { build });
    const bob: Principal = { username: 'bob', groups: [], issuer: 'svc', kind: 'session', tokenId: 't', expiresAt: undefined };
    expect(rights.explain(bob, 'logs', 'get', 'x')).to.deep.equal({ subjects: ['bob'], rule: 'unknown: this engine does not say' });
  });
});
