/** users.mfa.required: "true"/"false", default false; a bad value keeps the one in force, and at start means "true". */
import { expect } from 'chai';
import { mfaRequiredSection } from '../../src/accounts/mfa-required-section.js';
import { ProblemSink, formatProblem } from '../../src/config/problems.js';
import type { SettingsInput } from '../../src/config/settings.js';

function parse(value: string | undefined, previous?: boolean) {
  const sink = new ProblemSink();
  const cm = value === undefined ? {} : { 'users.mfa.required': value };
  const input = { cm, cmSink: sink.scoped('svc-cm') } as unknown as SettingsInput;
  return { value: mfaRequiredSection.parse(input, previous), problems: sink.problems.map(formatProblem) };
}

describe('accounts/mfa-required-section', () => {
  it('reads "true" and "false", and nothing as false', () => {
    expect(parse('true')).to.deep.equal({ value: true, problems: [] });
    expect(parse('false')).to.deep.equal({ value: false, problems: [] });
    expect(parse(undefined)).to.deep.equal({ value: false, problems: [] });
    expect(mfaRequiredSection.ownsCmKey?.('users.mfa.required')).to.equal(true);
  });

  it('names the key and the value of a bad one, keeps the value in force, and starts on the safe side', () => {
    const message = 'svc-cm: users.mfa.required: must be "true" or "false", not \'yes\'; the previous value stays in force (at start: "true", the safe side)';
    expect(parse('yes', false)).to.deep.equal({ value: false, problems: [message] });
    expect(parse('yes')).to.deep.equal({ value: true, problems: [message] });
  });
});
