/** Behaviour every engine must show; enforcer.test.ts runs it against each one. */
import { expect } from 'chai';
import { createEnforcer } from '../../src/rbac/enforcer.js';
import type { Engine, RbacEnforcer } from '../../src/rbac/enforcer.js';
import type { PolicyInput } from '../../src/rbac/policy.js';
import { policyOf } from './helpers.js';

export function enforcerSuite(engine: Engine): void {
  describe(`enforcer contract: ${engine}`, () => {
    const build = (csv: string, rest: Omit<PolicyInput, 'csv'> = {}): Promise<RbacEnforcer> =>
      createEnforcer(policyOf(csv, rest), { engine, decisionCacheEntries: 0 });

    it('gives role:readonly get on every resource but extensions, and nothing else', async () => {
      const e = await build('g, viewer, role:readonly');
      for (const res of ['accounts', 'applications', 'clusters', 'projects', 'logs']) {
        expect(e.can(['viewer'], res, 'get', 'team-a/api'), res).to.equal(true);
      }
      // An extension's GET is its backend's data: only a line written for extensions gives it.
      expect(e.can(['viewer'], 'extensions', 'get', 'team-a/api')).to.equal(false);
      expect(e.can(['viewer'], 'accounts', 'update', 'bob')).to.equal(false);
      expect(e.can(['viewer'], 'extensions', 'invoke', 'metrics')).to.equal(false);
    });

    it('gives role:admin everything, the readonly rights by inheritance, and the admin account', async () => {
      const e = await build('g, root, role:admin');
      expect(e.can(['root'], 'accounts', 'update', 'bob')).to.equal(true);
      expect(e.can(['root'], 'extensions', 'invoke', 'metrics')).to.equal(true);
      expect(e.can(['admin'], 'applications', 'delete', 'team-a/api')).to.equal(true);
      expect(e.can(['nobody'], 'applications', 'get', 'team-a/api')).to.equal(false);
    });

    it('follows g lines from users and from groups, transitively', async () => {
      const e = await build(
        ['p, role:deployer, applications, sync, team-a/*', 'g, team-a-devs, role:deployer', 'g, carol, team-a-devs', 'p, dave, logs, get, team-a/*'].join('\n'),
      );
      expect(e.can(['alice', 'team-a-devs'], 'applications', 'sync', 'team-a/api')).to.equal(true);
      expect(e.can(['carol'], 'applications', 'sync', 'team-a/api')).to.equal(true);
      expect(e.can(['alice'], 'applications', 'sync', 'team-a/api')).to.equal(false);
      expect(e.can(['dave'], 'logs', 'get', 'team-a/api')).to.equal(true);
      expect(e.can(['dave'], 'logs', 'get', 'team-b/api')).to.equal(false);
    });

    it('matches globs in objects, / included', async () => {
      const e = await build(
        ['p, role:p, applications, get, proj/*', 'p, role:x, extensions, post, */ext', 'p, role:all, applications, sync, */*', 'g, u, role:p', 'g, v, role:x', 'g, w, role:all'].join('\n'),
      );
      expect(e.can(['u'], 'applications', 'get', 'proj/app')).to.equal(true);
      expect(e.can(['u'], 'applications', 'get', 'proj/ns/app')).to.equal(true);
      expect(e.can(['u'], 'applications', 'get', 'other/app')).to.equal(false);
      expect(e.can(['v'], 'extensions', 'post', 'team-a/ext')).to.equal(true);
      expect(e.can(['v'], 'extensions', 'post', 'team-a/extra')).to.equal(false);
      expect(e.can(['w'], 'applications', 'sync', 'team-a/api')).to.equal(true);
      expect(e.can(['w'], 'applications', 'sync', 'team-a')).to.equal(false);
    });

    it('extensions per method: a get line allows GET and HEAD, not POST', async () => {
      const e = await build('p, reader, extensions, get, */metrics');
      expect(e.can(['reader'], 'extensions', 'get', 'team-a/metrics')).to.equal(true);
      expect(e.can(['reader'], 'extensions', 'head', 'team-a/metrics')).to.equal(true);
      expect(e.can(['reader'], 'extensions', 'post', 'team-a/metrics')).to.equal(false);
      expect(e.can(['reader'], 'extensions', 'options', 'team-a/metrics')).to.equal(false);
    });

    it('extensions per method: a * line allows every method, a deny for one method takes only that one', async () => {
      const e = await build('p, dev, extensions, *, */metrics\np, dev, extensions, delete, */metrics, deny\np, ro, extensions, *, */metrics\np, ro, extensions, get, */metrics, deny');
      for (const method of ['get', 'head', 'post', 'put', 'patch', 'options', 'propfind']) {
        expect(e.can(['dev'], 'extensions', method, 'team-a/metrics'), method).to.equal(true);
      }
      expect(e.can(['dev'], 'extensions', 'delete', 'team-a/metrics')).to.equal(false);
      // A get deny covers HEAD as a get allow does.
      expect(e.can(['ro'], 'extensions', 'get', 'team-a/metrics')).to.equal(false);
      expect(e.can(['ro'], 'extensions', 'head', 'team-a/metrics')).to.equal(false);
      expect(e.can(['ro'], 'extensions', 'post', 'team-a/metrics')).to.equal(true);
    });

    it('extensions per method: a line for another resource speaks about extensions only with the action *', async () => {
      const e = await build('p, wide, *, get, *\np, all, *, *, */metrics\np, denied, extensions, *, *\np, denied, *, post, *, deny');
      expect(e.can(['wide'], 'extensions', 'get', 'team-a/metrics')).to.equal(false);
      expect(e.can(['wide'], 'applications', 'get', 'team-a/api')).to.equal(true);
      expect(e.can(['all'], 'extensions', 'post', 'team-a/metrics')).to.equal(true);
      expect(e.can(['denied'], 'extensions', 'post', 'team-a/metrics')).to.equal(true);
    });

    it('matches quoted {a,b} alternatives', async () => {
      const e = await build('p, u, applications, "{get,sync}", "{team-a,team-b}/*"');
      expect(e.can(['u'], 'applications', 'sync', 'team-b/api')).to.equal(true);
      expect(e.can(['u'], 'applications', 'delete', 'team-b/api')).to.equal(false);
      expect(e.can(['u'], 'applications', 'get', 'team-c/api')).to.equal(false);
    });

    it('lets a deny win over an allow, for one subject and across subjects', async () => {
      const e = await build(
        ['p, role:dev, applications, *, team-a/*', 'p, role:dev, applications, delete, team-a/prod, deny', 'g, alice, role:dev', 'p, interns, applications, sync, *, deny'].join('\n'),
      );
      expect(e.can(['alice'], 'applications', 'delete', 'team-a/api')).to.equal(true);
      expect(e.can(['alice'], 'applications', 'delete', 'team-a/prod')).to.equal(false);
      expect(e.can(['alice'], 'applications', 'sync', 'team-a/api')).to.equal(true);
      expect(e.can(['alice', 'interns'], 'applications', 'sync', 'team-a/api')).to.equal(false);
      expect(e.can(['interns', 'alice'], 'applications', 'get', 'team-a/api')).to.equal(true);
    });

    it('falls back to policy.default only when no rule matches any subject', async () => {
      const e = await build(
        ['p, role:guest, applications, get, *', 'p, role:guest, logs, get, *', 'p, mallory, logs, get, *, deny', 'p, bob, projects, get, x, deny'].join('\n'),
        { defaultRole: 'role:guest' },
      );
      expect(e.can(['stranger'], 'applications', 'get', 'team-a/api')).to.equal(true);
      expect(e.can([], 'applications', 'get', 'team-a/api')).to.equal(true);
      expect(e.can(['stranger'], 'applications', 'delete', 'team-a/api')).to.equal(false);
      // An explicit deny is a matching rule: the default role does not undo it.
      expect(e.can(['mallory'], 'logs', 'get', 'team-a/api')).to.equal(false);
      // A deny elsewhere does not stop the fallback for this request.
      expect(e.can(['bob'], 'logs', 'get', 'team-a/api')).to.equal(true);
      const builtinDefault = await build('', { defaultRole: 'role:readonly' });
      expect(builtinDefault.can(['anyone'], 'clusters', 'get', 'in-cluster')).to.equal(true);
      expect(builtinDefault.can(['anyone'], 'clusters', 'update', 'in-cluster')).to.equal(false);
    });

    it('combines policy.csv with its policy.<x>.csv overlays', async () => {
      const e = await build('g, alice, role:a', { overlays: { 'policy.a.csv': 'p, role:a, projects, get, team-a', 'policy.b.csv': 'g, alice, role:b\np, role:b, projects, update, team-a' } });
      expect(e.can(['alice'], 'projects', 'get', 'team-a')).to.equal(true);
      expect(e.can(['alice'], 'projects', 'update', 'team-a')).to.equal(true);
      expect(e.can(['alice'], 'projects', 'delete', 'team-a')).to.equal(false);
    });

    it('follows at most 10 g links, as the casbin default role manager does', async () => {
      const chain = Array.from({ length: 11 }, (_, i) => `g, ${i === 0 ? 'u' : `r${i}`}, r${i + 1}`);
      const e = await build([...chain, 'p, r10, logs, get, ten', 'p, r11, logs, get, eleven'].join('\n'));
      expect(e.can(['u'], 'logs', 'get', 'ten')).to.equal(true);
      expect(e.can(['u'], 'logs', 'get', 'eleven')).to.equal(false);
      expect(e.can(['r1'], 'logs', 'get', 'eleven')).to.equal(true);
    });

    it('matches subjects exactly, never as globs', async () => {
      const e = await build('p, team-*, applications, get, *');
      expect(e.can(['team-a'], 'applications', 'get', 'x/y')).to.equal(false);
      expect(e.can(['team-*'], 'applications', 'get', 'x/y')).to.equal(true);
    });
  });
}
