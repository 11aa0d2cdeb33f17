import { expect } from 'chai';
import { compileCel, MAX_EXPRESSION_LENGTH, MAX_ITERATIONS } from '../../src/claims/cel-program.js';
import { celInput } from '../../src/claims/cel-input.js';

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
    expect((value as Error).message).to.equal(`the expression's cost bound was reached (${MAX_ITERATIONS} comprehension elements)`);
    const small = celInput({ g: ['a', 'b'] });
    expect(nested.evaluate({ claims: small, user: celInput({}) })).to.equal(false);
  });

  it('gives a missing claim as an error, not as false or empty', () => {
    const value = run('claims.missing == "x"', {});
    expect(value).to.be.an('error');
    expect((value as Error).message).to.match(/missing/);
  });
});
