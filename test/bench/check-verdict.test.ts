import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { judge, judgeAll, median, parsePublished, type Published } from '../../bench/check-verdict.js';

describe('bench:check verdict', () => {
  const goal = { what: 'svc logins / LemonLDAP::NG logins', goal: 6 };
  const figure = { published: 5, measured: 'a run' };
  const HERE = 'AMD EPYC (family 25, model 17, stepping 1), 2 vCPUs, 24 GiB';
  const ELSEWHERE = 'Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz (family 6, model 106, stepping 6), 2 vCPUs, 8 GiB';
  const published: Published = {
    ratios: { logins: goal, refresh: { what: 'svc refresh / the floor', goal: 0.9 } },
    machines: [{ kind: HERE, figures: { logins: figure } }],
  };

  it('fails a ratio more than 20 % below the published figure, and only then', () => {
    expect(judge('logins', goal, figure, 4.01).regression).to.equal(false);
    expect(judge('logins', goal, figure, 3.99).regression).to.equal(true);
    expect(judge('logins', goal, figure, 3.99).line).to.include('FAIL: more than 20 % below the published figure');
    expect(judge('logins', goal, figure, 7).regression).to.equal(false);
  });

  it('prints the ratio beside its goal and the published figure, with the change', () => {
    const below = judge('logins', goal, figure, 4.5);
    expect(below.meetsGoal).to.equal(false);
    expect(below.line).to.match(/4\.50 x +goal >= 6 x +below +published 5\.00 x \( +-10 %\) +ok/);
    expect(judge('logins', goal, figure, 6.5).line).to.match(/goal >= 6 x +met .*\( +\+30 %\)/);
  });

  it('fails a ratio that was not measured, on any kind of machine', () => {
    expect(judge('logins', goal, figure, undefined).regression).to.equal(true);
    expect(judge('logins', goal, figure, Number.NaN).line).to.include('not measured');
    expect(judgeAll(published, ELSEWHERE, { logins: undefined, refresh: 1 }, '2026-11-28').failed).to.deep.equal(['logins']);
  });

  it('judges against the figures published for the same kind of machine', () => {
    const same = judgeAll(published, HERE, { logins: 3.9, refresh: 0.95 }, '2026-11-28');
    expect(same.machine?.kind).to.equal(HERE);
    expect(same.failed).to.deep.equal(['logins']);
    expect(same.verdicts[0]?.line).to.include('published 5.00 x');
    // A ratio with no figure for this kind is printed, not judged.
    expect(same.verdicts[1]?.regression).to.equal(false);
    expect(same.verdicts[1]?.line).to.match(/0\.95 x +goal >= 0\.9 x +met +nothing published for this kind of machine$/);
    expect(same.notes).to.deep.equal([`machine kind: ${HERE}`]);
  });

  it("judges nothing against another kind's figures: says so, shows how to publish, and passes", () => {
    const other = judgeAll(published, ELSEWHERE, { logins: 3.9, refresh: 0.95 }, '2026-11-28');
    expect(other.machine).to.equal(undefined);
    expect(other.failed).to.deep.equal([]);
    for (const v of other.verdicts) expect(v.line).to.include('nothing published for this kind of machine');
    expect(other.verdicts.map((v) => v.change)).to.deep.equal([undefined, undefined]);
    expect(other.notes[0]).to.equal(`machine kind: ${ELSEWHERE}`);
    expect(other.notes[1]).to.equal(`nothing is published for this kind of machine (published: ${HERE}), so no figure is judged against another kind's.`);
    expect(other.notes[2]).to.include('add this entry to "machines" in bench/published.json');
    const entry = JSON.parse(other.notes[3] ?? '') as { kind: string; figures: Record<string, { published: number; measured: string }> };
    expect(entry.kind).to.equal(ELSEWHERE);
    expect(entry.figures['logins']?.published).to.equal(3.9);
    expect(entry.figures['refresh']?.published).to.equal(0.95);
    expect(entry.figures['logins']?.measured).to.match(/^2026-11-28, median of the rounds/);
    // The entry it prints is one parsePublished accepts.
    expect(() => parsePublished({ ratios: published.ratios, machines: [...published.machines, entry] })).not.to.throw();
  });

  it('reads the published figures, naming every wrong key at once', () => {
    const ok = { ratios: { logins: goal }, machines: [{ kind: HERE, figures: { logins: figure } }] };
    expect(parsePublished(ok).machines[0]?.figures['logins']?.published).to.equal(5);
    expect(() => parsePublished({ ...ok, machines: [{ kind: HERE, figures: { logins: { ...figure, published: 0 } } }] }))
      .to.throw('bench/published.json: machines[0].figures.logins.published: expected a positive number, got 0');
    expect(() => parsePublished({ ...ok, ratios: { logins: { ...goal, what: '' } } })).to.throw('bench/published.json: ratios.logins.what: expected a sentence, got ""');
    expect(() => parsePublished({ ...ok, machines: [{ kind: '', figures: {} }] })).to.throw('bench/published.json: machines[0].kind: expected a sentence');
    expect(() => parsePublished({ ...ok, machines: [{ kind: HERE, figures: { login: figure } }] }))
      .to.throw('bench/published.json: machines[0].figures.login: not a ratio of "ratios" (logins)');
    expect(() => parsePublished({ ...ok, machines: [{ kind: HERE, figures: {} }, { kind: HERE, figures: {} }] }))
      .to.throw(`bench/published.json: machines[1].kind: "${HERE}" is published twice; one entry per kind`);
    expect(() => parsePublished({ ...ok, machines: [{ kind: HERE, figures: { logins: { ...figure, publised: 5 } } }] }))
      .to.throw('bench/published.json: machines[0].figures.logins.publised: unknown key (expected published, measured)');
    expect(() => parsePublished({ ratios: { logins: goal }, machine: [] }))
      .to.throw('bench/published.json: machine: unknown key (expected ratios, machines)\nbench/published.json: machines: expected a list of { kind, figures }');
    // The old flat shape (one figure per ratio, no kind) is refused, naming its keys.
    expect(() => parsePublished({ logins: { ...goal, ...figure } })).to.throw('bench/published.json: logins: unknown key (expected ratios, machines)');
    expect(() => parsePublished([])).to.throw('expected an object with "ratios" and "machines"');
  });

  it('ships published figures in the new shape, every ratio bench:check measures with a goal', () => {
    const shipped = parsePublished(JSON.parse(readFileSync(new URL('../../bench/published.json', import.meta.url), 'utf8')));
    expect(Object.keys(shipped.ratios)).to.have.members(['ssoLogins', 'refreshGrants', 'proxy', 'identityAssertion', 'rateLimit', 'tracingSso', 'tracingProxy']);
    expect(shipped.ratios['refreshGrants']?.goal).to.equal(0.9);
    expect(shipped.ratios['refreshGrants']?.what).to.include('refresh floor');
  });

  it("judges the rounds' median, and no ratio when a round measured none", () => {
    expect(median([4, 9, 5])).to.equal(5);
    expect(median([4, 6])).to.equal(5);
    expect(median([7])).to.equal(7);
    expect(median([4, undefined, 5])).to.equal(undefined);
    expect(median([])).to.equal(undefined);
  });
});
