import { expect } from 'chai';
import { ProblemSink } from '../../src/config/problems.js';
import { MAX_LIST_LENGTH, MAX_STRING_LENGTH } from '../../src/claims/cel-input.js';
import { applyClaimRules, ClaimRuleRefused, type RuleUser } from '../../src/claims/evaluate.js';
import { parseClaimRules, type ClaimRules } from '../../src/claims/rules-config.js';

function rules(raw: Record<string, unknown>): ClaimRules {
  const sink = new ProblemSink();
  const parsed = parseClaimRules(raw, sink.scoped('svc-cm').at('oidc.config'));
  if (parsed === undefined) throw new Error(sink.problems.map((p) => p.message).join('; '));
  return parsed;
}

const USER: RuleUser = { uid: 'u-1', username: 'u-1', email: 'ann@example.com', name: 'Ann', groups: ['argo-dev', 'hr'] };
const ISSUE_RULES = rules({
  claimValidationRules: [{ expression: 'claims.email_verified == true', message: 'the email address is not verified' }],
  claimMappings: {
    username: { expression: 'claims.preferred_username' },
    email: { expression: 'claims.email' },
    name: { expression: 'claims.name' },
    groups: { expression: 'claims.roles.filter(r, r.startsWith("argo-")).map(r, "corp:" + r)' },
  },
  userValidationRules: [{ expression: '!user.groups.exists(g, g == "corp:argo-contractors")', message: 'contractors use the partner portal' }],
});
const CLAIMS = { sub: 'u-1', email_verified: true, preferred_username: 'ann', email: 'ann@corp.example', name: 'Ann A.', roles: ['argo-dev', 'hr', 'argo-ops'] };

function refusal(run: () => unknown): ClaimRuleRefused {
  try {
    run();
  } catch (err: unknown) {
    if (err instanceof ClaimRuleRefused) return err;
    throw err;
  }
  throw new Error('not refused');
}

describe('claims/evaluate', () => {
  it('validates the claims, replaces each mapped field and keeps the stable id', () => {
    expect(applyClaimRules(ISSUE_RULES, CLAIMS, USER)).to.deep.equal({
      uid: 'u-1', username: 'ann', email: 'ann@corp.example', name: 'Ann A.', groups: ['corp:argo-dev', 'corp:argo-ops'],
    });
  });

  it('refuses with the rule\'s message when a claim rule gives false, and names the rule for the log', () => {
    const err = refusal(() => applyClaimRules(ISSUE_RULES, { ...CLAIMS, email_verified: false }, USER));
    expect(err.message).to.equal('the email address is not verified');
    expect(err.reason).to.equal('claimValidationRules[0] gave false');
    expect(err.code).to.equal('permission_denied');
  });

  it('refuses with the rule\'s message when a user rule reads the mapped groups and gives false', () => {
    const err = refusal(() => applyClaimRules(ISSUE_RULES, { ...CLAIMS, roles: ['argo-contractors'] }, USER));
    expect(err.message).to.equal('contractors use the partner portal');
    expect(err.reason).to.equal('userValidationRules[0] gave false');
  });

  it('fails closed: a rule that cannot be evaluated (a missing claim) refuses with its message, and so does a mapping that fails or gives the wrong type', () => {
    const missing = refusal(() => applyClaimRules(ISSUE_RULES, { ...CLAIMS, email_verified: undefined }, USER));
    expect(missing.message).to.equal('the email address is not verified');
    expect(missing.reason).to.match(/^claimValidationRules\[0\] could not be evaluated: /);
    const noRoles = refusal(() => applyClaimRules(ISSUE_RULES, { ...CLAIMS, roles: undefined }, USER));
    expect(noRoles.reason).to.match(/^claimMappings\.groups could not be evaluated: /);
    const wrongType = refusal(() => applyClaimRules(rules({ claimMappings: { groups: { expression: 'claims.roles' } } }), { roles: [1, 2] }, USER));
    expect(wrongType.reason).to.equal('claimMappings.groups gave a list with something other than strings');
    const emptyName = refusal(() => applyClaimRules(rules({ claimMappings: { username: { expression: 'claims.x' } } }), { x: ' ' }, USER));
    expect(emptyName.reason).to.equal('claimMappings.username gave an empty name');
    const notBool = refusal(() => applyClaimRules(rules({ claimValidationRules: [{ expression: 'claims.x', message: 'no' }] }), { x: 'yes' }, USER));
    expect(notBool.reason).to.equal('claimValidationRules[0] gave a value that is not true or false');
  });

  it('refuses, never evaluates, claims or a user past the input bounds, naming the value (issue 54)', () => {
    const long = refusal(() => applyClaimRules(ISSUE_RULES, { ...CLAIMS, roles: ['argo-dev', `argo-${'-'.repeat(MAX_STRING_LENGTH)}`] }, USER));
    expect(long.message).to.equal('the email address is not verified');
    expect(long.reason).to.equal(`the claims cannot be evaluated: claims.roles[1] is longer than ${MAX_STRING_LENGTH} characters`);
    const many = refusal(() => applyClaimRules(ISSUE_RULES, CLAIMS, { ...USER, groups: Array.from({ length: MAX_LIST_LENGTH + 1 }, (_, i) => `g${i}`) }));
    expect(many.reason).to.equal(`the claims cannot be evaluated: user.groups holds more than ${MAX_LIST_LENGTH} values`);
  });

  it('takes a single string from a groups mapping as one group', () => {
    expect(applyClaimRules(rules({ claimMappings: { groups: { expression: 'claims.team' } } }), { team: 'ops' }, USER).groups).to.deep.equal(['ops']);
  });
});
