import { expect } from 'chai';
import { COST_BOUND_MESSAGE } from '../../src/claims/cel-cost.js';
import { compileCel, MAX_EXPRESSION_LENGTH } from '../../src/claims/cel-program.js';
import { celInput, MAX_LIST_LENGTH, MAX_STRING_LENGTH } from '../../src/claims/cel-input.js';

function program(expression: string, wanted: 'bool' | 'string' | 'strings' = 'bool') {
  const compiled = compileCel(expression, wanted);
  if (!compiled.ok) throw new Error(compiled.message);
  return compiled.program;
}

const run = (expression: string, claims: Record<string, unknown>, wanted: 'bool' | 'string' | 'strings' = 'bool') =>
  program(expression, wanted).evaluate({ claims: celInput(claims), user: celInput({ username: 'ann', groups: [] }) });

describe('claims/cel-program', () => {
  it('evaluates the issue\'s examples: a check, a nested claim, a filter and map of groups', () => {
    expect(run('claims.email_verified == true', { email_verified: true })).to.equal(true);
    expect(run('claims.email_verified == true', { email_verified: false })).to.equal(false);
    expect(run('claims.org.team == "a"', { org: { team: 'a' } })).to.equal(true);
    const groups = run('claims.roles.filter(r, r.startsWith("argo-")).map(r, "corp:" + r)', { roles: ['argo-dev', 'hr', 'argo-ops'] }, 'strings');
    expect([...(groups as Iterable<unknown>)]).to.deep.equal(['corp:argo-dev', 'corp:argo-ops']);
    expect(run('claims.email.split("@")[1] == "example.com"', { email: 'ann@example.com' })).to.equal(true);
    expect(run('claims.n == 3', { n: 3 })).to.equal(true);
  });

  it('refuses at compile time what does not parse, an unknown name or function, and a result of the wrong type, with CEL\'s words', () => {
    const problem = (expression: string, wanted: 'bool' | 'string' | 'strings' = 'bool') => {
      const compiled = compileCel(expression, wanted);
      return compiled.ok ? undefined : compiled.message;
    };
    expect(problem('claims.email ==')).to.match(/^does not compile: <input>:1:\d+: /);
    expect(problem('claim.email == "a"')).to.equal("does not compile: undeclared reference to 'claim' (only claims and user are defined)");
    expect(problem('claims.email.frob()')).to.equal("does not compile: found no function 'frob'");
    expect(problem('"a" + "b"')).to.equal('must give true or false, but gives a string');
    expect(problem('size(claims.groups)', 'string')).to.equal('must give a string, but gives an int');
    expect(problem('claims.a == 1', 'strings')).to.equal('must give a string or a list of strings, but gives true or false');
    expect(problem('claims.groups.map(g, g)', 'strings')).to.equal(undefined);
    expect(problem('claims.groups.exists(g, g == "a")', 'strings')).to.equal('must give a string or a list of strings, but gives true or false');
    expect(problem('')).to.equal('must not be empty');
    expect(problem(`claims.a == "${'x'.repeat(MAX_EXPRESSION_LENGTH)}"`)).to.equal(`is longer than ${MAX_EXPRESSION_LENGTH} characters`);
    expect(problem('[1].all(a, [1].all(b, [1].all(c, [1].all(d, true))))')).to.equal('does not compile: comprehensions are nested deeper than 3');
  });

  it('bounds the cost of one evaluation: nested comprehensions over large claims stop with an error, and the next evaluation has its whole budget again', () => {
    const nested = program('claims.g.exists(a, claims.g.exists(b, a + b == "never"))');
    const big = celInput({ g: Array.from({ length: 400 }, (_, i) => `g${i}`) }); // 400 + 400 * 400 elements
    const value = nested.evaluate({ claims: big, user: celInput({}) });
    expect(value).to.be.an('error');
    expect((value as Error).message).to.equal(COST_BOUND_MESSAGE);
    const small = celInput({ g: ['a', 'b'] });
    expect(nested.evaluate({ claims: small, user: celInput({}) })).to.equal(false);
  });

  it('gives a missing claim as an error, not as false or empty', () => {
    const value = run('claims.missing == "x"', {});
    expect(value).to.be.an('error');
    expect((value as Error).message).to.match(/missing/);
  });

  describe('the cost of the review\'s expressions (issue 54)', () => {
    const groups = (n: number, name = (i: number) => `group-${i}`) => Array.from({ length: n }, (_, i) => name(i));
    const refusedByTheBound = (expression: string, claims: Record<string, unknown>, wanted: 'bool' | 'strings' = 'bool') => {
      const value = run(expression, claims, wanted);
      expect(value, String(value)).to.be.an('error');
      expect((value as Error).message).to.equal(COST_BOUND_MESSAGE);
    };

    it('gives replace its result in linear time, as the strings extension does, and charges what it makes', () => {
      const mapped = run('claims.groups.map(g, g.replace("-", ":"))', { groups: ['team-dev-ops', 'a'] }, 'strings');
      expect([...(mapped as Iterable<unknown>)]).to.deep.equal(['team:dev:ops', 'a']);
      expect(run('claims.s.replace("-", ":", 1) == "a:b-c" && claims.s.replace("", ".") == ".a.-.b.-.c." && claims.s.replace("-", "", -1) == "abc" && claims.s.replace("x", "y") == claims.s', { s: 'a-b-c' })).to.equal(true);
      // The review's string of dashes, at the longest a value may be: done, and cheap.
      const long = run('claims.groups.map(g, g.replace("-", ":"))', { groups: [`team-${'-'.repeat(MAX_STRING_LENGTH - 5)}`] }, 'strings');
      expect([...(long as Iterable<string>)][0]).to.equal(`team:${':'.repeat(MAX_STRING_LENGTH - 5)}`);
      refusedByTheBound('claims.groups.map(g, g.replace("", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"))', { groups: groups(30, () => 'a'.repeat(MAX_STRING_LENGTH)) }, 'strings');
    });

    it('charges in on a list inside a comprehension, and string functions, by what they read', () => {
      refusedByTheBound('claims.groups.exists(g, !(g in claims.groups))', { groups: groups(MAX_LIST_LENGTH) });
      refusedByTheBound('claims.groups.exists(g, claims.s.contains(g))', { groups: groups(MAX_LIST_LENGTH), s: 'x'.repeat(MAX_STRING_LENGTH) });
      refusedByTheBound('claims.groups.exists(g, g.matches("^corp:argo-[0-9]+$"))', { groups: groups(MAX_LIST_LENGTH) });
      refusedByTheBound('claims.groups.join(claims.s).size() > 0 && claims.groups.exists(g, claims.groups.join(claims.s).size() == 0)', { groups: groups(MAX_LIST_LENGTH), s: 'x'.repeat(MAX_STRING_LENGTH) });
    });

    it('reaches the bound before the stack ends on nested map and exists over the most groups a list may hold', () => {
      refusedByTheBound('claims.groups.map(a, claims.groups.map(b, a + b)).exists(l, l.exists(x, x == "never"))', { groups: groups(MAX_LIST_LENGTH) });
      // A mapped list of the most groups reads in linear time, without nesting a view per element.
      expect(run('claims.groups.map(g, "ldap:" + g)[4999] == "ldap:group-4999"', { groups: groups(MAX_LIST_LENGTH) })).to.equal(true);
    });

    it('refuses a value made after the bound was reached even where CEL would let the other side decide', () => {
      refusedByTheBound('claims.groups.exists(g, claims.groups.exists(h, h == g + "x")) || true', { groups: groups(MAX_LIST_LENGTH) });
    });
  });
});
