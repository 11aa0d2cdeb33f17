import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { judge, median, parsePublished } from '../../bench/check-verdict.js';

describe('bench:check verdict', () => {
  const entry = { what: 'svc logins / LemonLDAP::NG logins', goal: 6, published: 5, measured: 'a run' };

  it('fails a ratio more than 20 % below the published figure, and only then', () => {
    expect(judge('logins', entry, 4.01).regression).to.equal(false);
    expect(judge('logins', entry, 3.99).regression).to.equal(true);
    expect(judge('logins', entry, 3.99).line).to.include('FAIL: more than 20 % below the published figure');
    expect(judge('logins', entry, 7).regression).to.equal(false);
  });

  it('prints the ratio beside its goal and the published figure, with the change', () => {
    const below = judge('logins', entry, 4.5);
    expect(below.meetsGoal).to.equal(false);
    expect(below.line).to.match(/4\.50 x +goal >= 6 x +below +published 5\.00 x \( +-10 %\) +ok/);
    expect(judge('logins', entry, 6.5).line).to.match(/goal >= 6 x +met .*\( +\+30 %\)/);
  });

  it('fails a ratio that was not measured', () => {
    expect(judge('logins', entry, undefined).regression).to.equal(true);
    expect(judge('logins', entry, Number.NaN).line).to.include('not measured');
  });

  it('reads the published figures, naming a wrong key', () => {
    expect(() => parsePublished({ logins: { ...entry, published: 0 } })).to.throw('bench/published.json: logins.published: expected a positive number, got 0');
    expect(() => parsePublished({ logins: { ...entry, what: '' } })).to.throw('logins.what: expected a sentence');
    expect(() => parsePublished([])).to.throw('expected an object of ratios');
    const shipped = parsePublished(JSON.parse(readFileSync(new URL('../../bench/published.json', import.meta.url), 'utf8')));
    expect(Object.keys(shipped)).to.have.members(['ssoLogins', 'refreshGrants', 'proxy', 'identityAssertion', 'rateLimit', 'tracingSso', 'tracingProxy']);
  });

  it("judges the rounds' median, and no ratio when a round measured none", () => {
    expect(median([4, 9, 5])).to.equal(5);
    expect(median([4, 6])).to.equal(5);
    expect(median([7])).to.equal(7);
    expect(median([4, undefined, 5])).to.equal(undefined);
    expect(median([])).to.equal(undefined);
  });
});
