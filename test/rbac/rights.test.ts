import { expect } from 'chai';
import { canOffline } from '../../src/rbac/offline.js';
import { createRights } from '../../src/rbac/rights.js';
import { policyOf } from './helpers.js';

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
    const rights = await createRights(policyOf(''));
    const first = rights.update(policyOf('p, a, logs, get, *'));
    const second = rights.update(policyOf('p, b, logs, get, *'));
    await Promise.all([second, first]);
    expect(rights.can(['b'], 'logs', 'get', 'x')).to.equal(true);
    expect(rights.can(['a'], 'logs', 'get', 'x')).to.equal(false);
  });

  it('answers one offline question for a user or a group', async () => {
    const policy = policyOf('g, devs, role:dev\np, role:dev, extensions, invoke, */metrics\ng, eve, devs');
    expect(await canOffline(policy, 'devs', 'extensions', 'invoke', 'team-a/metrics')).to.equal(true);
    expect(await canOffline(policy, 'eve', 'extensions', 'invoke', 'team-a/metrics')).to.equal(true);
    expect(await canOffline(policy, 'mallory', 'extensions', 'invoke', 'team-a/metrics')).to.equal(false);
    expect(await canOffline(policy, 'admin', 'accounts', 'update', 'eve')).to.equal(true);
  });
});
