import { expect } from 'chai';
import { formatProblem, ProblemSink } from '../../src/config/problems.js';
import { createEnforcer } from '../../src/rbac/enforcer.js';
import { DEFAULT_SCOPES, parsePolicy } from '../../src/rbac/policy.js';
import type { Policy, PolicyInput } from '../../src/rbac/policy.js';

function parse(input: PolicyInput, previous?: Policy) {
  const sink = new ProblemSink();
  const policy = parsePolicy(input, sink.scoped('svc-rbac-cm'), previous);
  return { policy, problems: sink.problems.map(formatProblem) };
}

/** The fields that decide answers, without the per-key memory. */
function decisive(policy: Policy) {
  const { goodKeys: _goodKeys, ...rest } = policy;
  return rest;
}

describe('rbac/policy', () => {
  it('reads p and g lines, skips blanks and comments, trims fields, defaults the effect to allow', () => {
    const { policy, problems } = parse({
      csv: '# team a\n\n  p ,  role:a , applications, get, team-a/* \r\np, role:a, applications, delete, *, deny\ng, alice, role:a\n',
    });
    expect(problems).to.deep.equal([]);
    expect(policy.lines).to.deep.equal([
      { kind: 'p', sub: 'role:a', res: 'applications', act: 'get', obj: 'team-a/*', eft: 'allow' },
      { kind: 'p', sub: 'role:a', res: 'applications', act: 'delete', obj: '*', eft: 'deny' },
      { kind: 'g', member: 'alice', role: 'role:a' },
    ]);
  });

  it('reads quoted fields, with commas and doubled quotes inside', () => {
    const { policy, problems } = parse({ csv: 'p, "role:a", applications, get, "{team-a,team-b}/*"\ng, "say ""hi""", role:a' });
    expect(problems).to.deep.equal([]);
    expect(policy.lines).to.deep.equal([
      { kind: 'p', sub: 'role:a', res: 'applications', act: 'get', obj: '{team-a,team-b}/*', eft: 'allow' },
      { kind: 'g', member: 'say "hi"', role: 'role:a' },
    ]);
  });

  it('reports each malformed line with its key and number, and keeps every other line', () => {
    const { policy, problems } = parse({
      csv: [
        'p, role:a, applications, get, *', // 1 ok
        'x, role:a, applications', // 2 unknown type
        'p, role:a, applications, get', // 3 too few fields
        'p, role:a, applications, get, *, maybe', // 4 bad effect
        'p, role:a, , get, *', // 5 empty field
        'p, role:a, applications, get, "{a,b}', // 6 unterminated quote
        'g, alice', // 7 g too short
        'g, alice, role:a', // 8 ok
      ].join('\n'),
      overlays: { 'policy.team.csv': 'p, role:b, logs, get, *\np, role:b, logs' },
    });
    expect(problems).to.deep.equal([
      'svc-rbac-cm: policy.csv: line 2: unknown line type "x" (expected p or g), the previous version of policy.csv stays in force (at start: the line is ignored): "x, role:a, applications"',
      'svc-rbac-cm: policy.csv: line 3: a p line has 5 or 6 fields (p, subject, resource, action, object[, allow|deny]), found 4, the previous version of policy.csv stays in force (at start: the line is ignored): "p, role:a, applications, get"',
      'svc-rbac-cm: policy.csv: line 4: the effect must be allow or deny, not "maybe", the previous version of policy.csv stays in force (at start: the line is ignored): "p, role:a, applications, get, *, maybe"',
      'svc-rbac-cm: policy.csv: line 5: field 3 is empty, the previous version of policy.csv stays in force (at start: the line is ignored): "p, role:a, , get, *"',
      'svc-rbac-cm: policy.csv: line 6: unterminated quote, the previous version of policy.csv stays in force (at start: the line is ignored): "p, role:a, applications, get, \\"{a,b}"',
      'svc-rbac-cm: policy.csv: line 7: a g line has 3 fields (g, user-or-group, role), found 2, the previous version of policy.csv stays in force (at start: the line is ignored): "g, alice"',
      'svc-rbac-cm: policy.team.csv: line 2: a p line has 5 or 6 fields (p, subject, resource, action, object[, allow|deny]), found 3, the previous version of policy.team.csv stays in force (at start: the line is ignored): "p, role:b, logs"',
    ]);
    expect(policy.lines).to.deep.equal([
      { kind: 'p', sub: 'role:a', res: 'applications', act: 'get', obj: '*', eft: 'allow' },
      { kind: 'g', member: 'alice', role: 'role:a' },
      { kind: 'p', sub: 'role:b', res: 'logs', act: 'get', obj: '*', eft: 'allow' },
    ]);
  });

  it('refuses a pattern with more brace alternatives than the matcher expands, rather than let a deny go literal', () => {
    const huge = '{a,b,c,d}{a,b,c,d}{a,b,c,d}{a,b,c,d}{a,b,c,d}x'; // 4^5 = 1024: the limit, accepted
    const tooHuge = `${huge}{a,b}`; // 2048
    const previous = parse({ csv: 'p, role:a, applications, get, */*, deny' }).policy;
    // Quoted: the commas inside braces would otherwise split the CSV fields.
    const { policy, problems } = parse({ csv: `p, role:a, applications, get, */*, deny\np, role:a, applications, get, "${huge}", deny\np, role:a, applications, get, "${tooHuge}", deny` }, previous);
    expect(problems).to.have.length(1);
    expect(problems[0]).to.match(/^svc-rbac-cm: policy\.csv: line 3: field 5 expands to more than 1024 alternatives \(\{…,…\} braces\); split the rule, the previous version of policy\.csv stays in force/);
    expect(policy.lines).to.deep.equal(previous.lines);
  });

  it('puts the problem path as [key, "line N"]', () => {
    const sink = new ProblemSink();
    parsePolicy({ csv: '\n\np, a' }, sink.scoped('svc-rbac-cm'));
    expect(sink.problems[0]?.path).to.deep.equal(['policy.csv', 'line 3']);
    expect(sink.problems[0]?.source).to.equal('svc-rbac-cm');
  });

  it('appends policy.<x>.csv overlays after policy.csv in sorted key order, ignoring other keys', () => {
    const { policy } = parse({
      csv: 'g, a, role:main',
      overlays: { 'policy.z.csv': 'g, z, role:z', 'policy.b.csv': 'g, b, role:b', 'policy.default': 'role:x', scopes: '[x]' },
    });
    expect(policy.lines.map((l) => (l.kind === 'g' ? l.member : l.sub))).to.deep.equal(['a', 'b', 'z']);
  });

  it('reads policy.default and scopes, with [groups] as the default scopes', () => {
    expect(decisive(parse({ csv: '' }).policy)).to.deep.equal({ lines: [], scopes: ['groups'] });
    expect(decisive(parse({ defaultRole: '  ' }).policy)).to.deep.equal({ lines: [], scopes: DEFAULT_SCOPES });
    const { policy, problems } = parse({ defaultRole: ' role:readonly ', scopes: '[groups, email]' });
    expect(problems).to.deep.equal([]);
    expect(decisive(policy)).to.deep.equal({ lines: [], defaultRole: 'role:readonly', scopes: ['groups', 'email'] });
    expect(parse({ scopes: '["roles"]' }).policy.scopes).to.deep.equal(['roles']);
  });

  it('reports scopes that are not a list of names and keeps the default', () => {
    const bad = parse({ scopes: 'groups: yes' });
    expect(bad.policy.scopes).to.deep.equal(['groups']);
    expect(bad.problems).to.deep.equal(["svc-rbac-cm: scopes: must be a list of claim names, such as [groups]; the previous value stays in force (at start: 'groups')"]);
    const broken = parse({ scopes: '[groups' });
    expect(broken.policy.scopes).to.deep.equal(['groups']);
    expect(broken.problems[0]).to.match(/^svc-rbac-cm: scopes: YAML does not parse \(.+\); the previous value stays in force \(at start: 'groups'\)$/);
  });

  it('keeps the last good version of a key whole when its new text has a malformed line', () => {
    const first = parse({ csv: 'p, alice, extensions, *, */*, allow\np, alice, extensions, *, prod/*, deny', overlays: { 'policy.team.csv': 'g, bob, role:a' } });
    expect(first.problems).to.deep.equal([]);
    const next = parse(
      { csv: 'p, alice, extensions, *, */*, allow\np, alice, extensions, *, prod/*, deny, # no prod\np, alice, logs' , overlays: { 'policy.team.csv': 'g, carol, role:a' } },
      first.policy,
    );
    expect(next.problems).to.deep.equal([
      'svc-rbac-cm: policy.csv: line 2: a p line has 5 or 6 fields (p, subject, resource, action, object[, allow|deny]), found 7, the previous version of policy.csv stays in force (at start: the line is ignored): "p, alice, extensions, *, prod/*, deny, # no prod"',
      'svc-rbac-cm: policy.csv: line 3: a p line has 5 or 6 fields (p, subject, resource, action, object[, allow|deny]), found 3, the previous version of policy.csv stays in force (at start: the line is ignored): "p, alice, logs"',
    ]);
    // policy.csv as before; the good overlay's new version applies.
    expect(next.policy.lines).to.deep.equal([
      { kind: 'p', sub: 'alice', res: 'extensions', act: '*', obj: '*/*', eft: 'allow' },
      { kind: 'p', sub: 'alice', res: 'extensions', act: '*', obj: 'prod/*', eft: 'deny' },
      { kind: 'g', member: 'carol', role: 'role:a' },
    ]);
    // Still bad on the next change: the same good version stays; fixed: the new text applies.
    const again = parse({ csv: 'p, alice, extensions, *, */*, allow\np, alice, extensions' }, next.policy);
    expect(again.policy.lines).to.deep.equal(first.policy.lines.slice(0, 2));
    const fixed = parse({ csv: 'p, alice, extensions, *, */*, allow' }, again.policy);
    expect(fixed.problems).to.deep.equal([]);
    expect(fixed.policy.lines).to.have.length(1);
  });

  for (const engine of ['indexed', 'casbin'] as const) {
    it(`a bad change takes access away at once but never gives any (${engine})`, async () => {
      const first = parse({
        csv: 'p, role:all, applications, *, *\ng, bob, role:all\ng, carol, role:all\np, dan, logs, get, *',
        overlays: { 'policy.team.csv': 'p, erin, logs, get, *' },
        defaultRole: 'role:readonly',
      });
      // bob's g line becomes a deny; carol's g line goes and dan's allow too; a typo elsewhere.
      const next = parse(
        {
          csv: 'p, role:all, applications, *, *\np, bob, applications, *, *, deny\np, frank, applications, *, *\np, dan, logs\ng, erin, role:all',
          overlays: { 'policy.team.csv': 'p, erin, logs, get, *' },
          defaultRole: 'role:readonly',
        },
        first.policy,
      );
      expect(next.problems).to.have.length(1);
      const e = await createEnforcer(next.policy, { engine });
      expect(e.can(['bob'], 'applications', 'sync', 'p/a'), 'bob: the new deny line').to.equal(false);
      expect(e.can(['carol'], 'applications', 'sync', 'p/a'), 'carol: her g line was removed').to.equal(false);
      expect(e.can(['carol'], 'applications', 'get', 'p/a'), 'carol: the default role still reads').to.equal(true);
      expect(e.can(['frank'], 'applications', 'sync', 'p/a'), 'frank: a new allow line waits for a clean text').to.equal(false);
      expect(e.can(['erin'], 'applications', 'sync', 'p/a'), 'erin: a new g line too').to.equal(false);
      expect(e.can(['erin'], 'logs', 'get', 'x'), 'erin: the good overlay applies').to.equal(true);
      const fixed = parse({ csv: 'p, role:all, applications, *, *\np, frank, applications, *, *', defaultRole: 'role:readonly' }, next.policy);
      expect(fixed.policy.restrictTo).to.equal(undefined);
      expect((await createEnforcer(fixed.policy, { engine })).can(['frank'], 'applications', 'sync', 'p/a')).to.equal(true);
    });
  }

  it('drops only the bad lines of a key that has no good version yet, and keeps them out on the next change', () => {
    const first = parse({ csv: 'p, a, logs, get, *\np, a, logs' });
    expect(first.policy.lines).to.have.length(1);
    const next = parse({ csv: 'p, a, logs, get, *\np, b, logs, get, *\np, a, logs' }, first.policy);
    expect(next.problems).to.deep.equal([
      'svc-rbac-cm: policy.csv: line 3: a p line has 5 or 6 fields (p, subject, resource, action, object[, allow|deny]), found 3, the previous version of policy.csv stays in force (at start: the line is ignored): "p, a, logs"',
    ]);
    expect(next.policy.lines.map((l) => (l.kind === 'p' ? l.sub : ''))).to.deep.equal(['a', 'b']);
  });

  it('keeps the previous scopes when the new ones are bad', () => {
    const first = parse({ scopes: '[roles]' });
    expect(parse({ scopes: 'groups: yes' }, first.policy)).to.deep.include({
      problems: ["svc-rbac-cm: scopes: must be a list of claim names, such as [groups]; the previous value stays in force (at start: 'groups')"],
    });
    expect(parse({ scopes: 'groups: yes' }, first.policy).policy.scopes).to.deep.equal(['roles']);
    expect(parse({ scopes: '[roles' }, first.policy).problems).to.deep.equal([
      'svc-rbac-cm: scopes: YAML does not parse (Flow sequence must end with a ] at line 1, column 7); the previous value stays in force (at start: \'groups\')',
    ]);
  });
});
