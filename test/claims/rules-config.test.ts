import { expect } from 'chai';
import { formatProblem, ProblemSink } from '../../src/config/problems.js';
import { NO_CLAIM_RULES, parseClaimRules, withoutClaimRules } from '../../src/claims/rules-config.js';

function parse(raw: Record<string, unknown>) {
  const sink = new ProblemSink();
  const rules = parseClaimRules(raw, sink.scoped('svc-cm').at('oidc.config'));
  return { rules, problems: sink.problems.map(formatProblem) };
}

describe('claims/rules-config', () => {
  it('compiles the three keys in Kubernetes\' shape and leaves every other key alone', () => {
    const { rules, problems } = parse({
      issuer: 'https://idp.example.com',
      claimValidationRules: [{ expression: 'claims.email_verified == true', message: 'the email address is not verified' }],
      claimMappings: { username: { expression: 'claims.preferred_username' }, groups: { expression: 'claims.roles.map(r, "corp:" + r)' } },
      userValidationRules: [{ expression: '!user.groups.exists(g, g == "contractors")' }],
    });
    expect(problems).to.deep.equal([]);
    expect(rules?.claimValidationRules.map((r) => [r.key, r.message])).to.deep.equal([['claimValidationRules[0]', 'the email address is not verified']]);
    expect(Object.keys(rules?.claimMappings ?? {})).to.deep.equal(['username', 'groups']);
    expect(rules?.userValidationRules[0]?.message).to.equal('the login does not meet the rule userValidationRules[0] of the identity source');
    expect(parse({ issuer: 'x' }).rules).to.equal(NO_CLAIM_RULES);
    expect(withoutClaimRules({ issuer: 'x', claimMappings: {}, claimValidationRules: [] })).to.deep.equal({ issuer: 'x' });
  });

  it('names the key of an expression that does not compile or has the wrong type, with CEL\'s message, and gives no rules', () => {
    const { rules, problems } = parse({
      claimValidationRules: [{ expression: 'claims.email_verified ==', message: 'm' }],
      claimMappings: { groups: { expression: 'claims.groups.exists(g, g == "a")' }, name: { expression: 'size(claims.name)' } },
      userValidationRules: [{ expression: '"not a bool"' }],
    });
    expect(rules).to.equal(undefined);
    expect(problems[0]).to.match(/^svc-cm: oidc\.config: claimValidationRules\[0\]\.expression: does not compile: <input>:1:\d+: /);
    expect(problems.slice(1)).to.deep.equal([
      'svc-cm: oidc.config: claimMappings.name.expression: must give a string, but gives an int',
      'svc-cm: oidc.config: claimMappings.groups.expression: must give a string or a list of strings, but gives true or false',
      'svc-cm: oidc.config: userValidationRules[0].expression: must give true or false, but gives a string',
    ]);
  });

  it('reports a misspelt or unknown key inside the rules with "did you mean", and a missing expression', () => {
    const { problems } = parse({
      claimMappings: { usernme: { expression: 'claims.sub' }, groups: {} },
      claimValidationRules: [{ expresion: 'true' }],
    });
    expect(problems).to.have.members([
      "svc-cm: oidc.config: claimMappings.usernme: unknown key; did you mean 'username'?",
      'svc-cm: oidc.config: claimMappings.groups.expression: required',
      "svc-cm: oidc.config: claimValidationRules[0].expresion: unknown key; did you mean 'expression'?",
      'svc-cm: oidc.config: claimValidationRules[0].expression: required',
    ]);
  });
});
