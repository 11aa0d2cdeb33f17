import { expect } from 'chai';
import { celInput, MAX_INPUT_CHARACTERS, MAX_INPUT_VALUES, MAX_LIST_LENGTH, MAX_STRING_LENGTH } from '../../src/claims/cel-input.js';

describe('claims/cel-input', () => {
  const refusal = (value: unknown, name?: string): string => {
    try {
      celInput(value, name);
    } catch (err: unknown) {
      return (err as Error).message;
    }
    throw new Error('expected a refusal');
  };

  it('takes claims at the bounds: the longest string, the longest list', () => {
    expect(() => celInput({ groups: Array.from({ length: MAX_LIST_LENGTH }, (_, i) => `g${i}`), s: 'x'.repeat(MAX_STRING_LENGTH) })).to.not.throw();
  });

  it('refuses a string, a list and a whole input past their bounds, naming the value (issue 54)', () => {
    expect(refusal({ groups: ['a', `team-${'-'.repeat(MAX_STRING_LENGTH)}`] })).to.equal(`claims.groups[1] is longer than ${MAX_STRING_LENGTH} characters`);
    expect(refusal({ groups: Array.from({ length: MAX_LIST_LENGTH + 1 }, () => 'g') })).to.equal(`claims.groups holds more than ${MAX_LIST_LENGTH} values`);
    expect(refusal({ groups: Array.from({ length: MAX_LIST_LENGTH + 1 }, () => 'g') }, 'user')).to.equal(`user.groups holds more than ${MAX_LIST_LENGTH} values`);
    const lists = Object.fromEntries(Array.from({ length: 3 }, (_, i) => [`a${i}`, Array.from({ length: MAX_INPUT_VALUES / 2 }, () => 'v')]));
    expect(refusal(lists)).to.match(new RegExp(`^the input holds more than ${MAX_INPUT_VALUES} values \\(at claims\\.a1\\[\\d+\\]\\)$`));
    const strings = Object.fromEntries(Array.from({ length: Math.ceil(MAX_INPUT_CHARACTERS / MAX_STRING_LENGTH) + 1 }, (_, i) => [`s${i}`, 'x'.repeat(MAX_STRING_LENGTH)]));
    expect(refusal(strings)).to.match(new RegExp(`^the input holds more than ${MAX_INPUT_CHARACTERS} characters \\(at claims\\.s\\d+\\)$`));
  });
});
