import { expect } from 'chai';
import fc from 'fast-check';
import { createEnforcer } from '../../src/rbac/enforcer.js';
import type { PolicyRule } from '../../src/rbac/policy.js';
import { enforcerSuite } from './enforcer-suite.js';
import { policyOf } from './helpers.js';

enforcerSuite('indexed');
enforcerSuite('casbin');

describe('rbac/enforcer', () => {
  it('indexed and casbin engines agree on random policies', async () => {
    const names = ['u1', 'u2', 'g1', 'g2', 'role:a', 'role:b', 'role:readonly'];
    const name = fc.constantFrom(...names);
    const pattern = (values: string[]) => fc.constantFrom(...values, '*', '*/*', '{x,y}/*', '?/a');
    const resources = ['applications', 'logs'];
    const actions = ['get', 'sync'];
    const objects = ['x/a', 'y/b', 'z/a', 'x'];
    const pRule = fc.record({
      kind: fc.constant('p' as const),
      sub: name,
      res: pattern(resources),
      act: pattern(actions),
      obj: pattern(objects),
      eft: fc.constantFrom('allow' as const, 'deny' as const),
    });
    const gRule = fc.record({ kind: fc.constant('g' as const), member: name, role: name });
    const rules = fc.array(fc.oneof(pRule, gRule), { maxLength: 14 });
    const request = fc.tuple(fc.uniqueArray(name, { maxLength: 3 }), fc.constantFrom(...resources), fc.constantFrom(...actions), fc.constantFrom(...objects));
    await fc.assert(
      fc.asyncProperty(rules, fc.option(name, { nil: undefined }), fc.array(request, { minLength: 1, maxLength: 8 }), async (lines: PolicyRule[], defaultRole, requests) => {
        const policy = defaultRole === undefined ? { lines, scopes: ['groups'] } : { lines, defaultRole, scopes: ['groups'] };
        const indexed = await createEnforcer(policy, { engine: 'indexed', decisionCacheEntries: 0 });
        const casbin = await createEnforcer(policy, { engine: 'casbin', decisionCacheEntries: 0 });
        for (const [subjects, res, act, obj] of requests) {
          expect(indexed.can(subjects, res, act, obj), JSON.stringify({ subjects, res, act, obj })).to.equal(casbin.can(subjects, res, act, obj));
        }
      }),
      { numRuns: 150 },
    );
  });

  it('caches decisions, also for a request with a NUL in it (uncached, still right)', async () => {
    const e = await createEnforcer(policyOf('p, u, logs, get, a*'));
    expect(e.can(['u'], 'logs', 'get', 'ab')).to.equal(true);
    expect(e.can(['u'], 'logs', 'get', 'ab')).to.equal(true);
    expect(e.can(['u'], 'logs', 'get', 'a\0b')).to.equal(true);
    expect(e.can(['u'], 'logs\0get', '', 'a')).to.equal(false);
  });

  it('bounds the decision cache by bytes and does not cache oversized keys', async () => {
    const e = await createEnforcer(policyOf('p, u, logs, get, *'), { decisionCacheBytes: 1024 * 1024 });
    for (let i = 0; i < 200; i++) expect(e.can(['u'], 'logs', 'get', `${i}-`.padEnd(16 * 1024, 'x'))).to.equal(true);
    expect(e.cached().entries).to.equal(0);
    for (let i = 0; i < 5000; i++) e.can(['u'], 'logs', 'get', `${i}-`.padEnd(1000, 'x'));
    expect(e.cached().bytes).to.be.at.most(1024 * 1024);
    expect(e.cached().entries).to.be.at.most(600).and.above(0);
    e.can(['u'], 'logs', 'get', 'a');
    expect(e.cached().entries).to.be.above(0);
  });

  it('keeps the policy it was built from', async () => {
    const policy = policyOf('g, a, role:admin', { defaultRole: 'role:readonly' });
    const e = await createEnforcer(policy);
    expect(e.policy).to.equal(policy);
  });
});
