/**
 * restrictAccount (src/accounts/restrict.ts): what an account keeps when its new settings do not
 * all parse. Each field may only narrow: the result grants no more than the last good version,
 * nor more than what can be read of the new text.
 */
import { expect } from 'chai';
import type { AccountSettings, ApiTokenRecord } from '../../src/accounts/account.js';
import { restrictAccount, type AccountReading } from '../../src/accounts/restrict.js';

const previous: AccountSettings = {
  name: 'ci',
  enabled: true,
  capabilities: ['apiKey', 'login'],
  passwordHash: '$2b$10$old',
  passwordMtime: new Date(1_000_000),
  tokens: [{ id: 'a', jti: 'ja', iat: 10, exp: 100 }, { id: 'b', iat: 20 }],
};
const nothingRead: AccountReading = { enabled: undefined, capabilities: undefined, passwordHash: undefined, passwordMtime: undefined, tokens: undefined, tokensText: undefined };
const keep = (reading: Partial<AccountReading>) => restrictAccount(previous, { ...nothingRead, ...reading });

describe('accounts/restrict', () => {
  it('disables if either version says so, and keeps the old flag when the new one cannot be read', () => {
    expect(keep({ enabled: false }).enabled).to.equal(false);
    expect(keep({ enabled: true }).enabled).to.equal(true);
    expect(keep({}).enabled).to.equal(true);
    expect(restrictAccount({ ...previous, enabled: false }, { ...nothingRead, enabled: true }).enabled).to.equal(false);
  });

  it('keeps the old capabilities the new list still names, and only those', () => {
    expect(keep({}).capabilities).to.deep.equal(['apiKey', 'login']);
    expect(keep({ capabilities: ['login'] }).capabilities).to.deep.equal(['login']);
    expect(keep({ capabilities: [] }).capabilities).to.deep.equal([]);
    expect(restrictAccount({ ...previous, capabilities: ['login'] }, { ...nothingRead, capabilities: ['apiKey', 'login'] }).capabilities).to.deep.equal(['login']);
  });

  it('keeps the password only when the new text holds the same hash', () => {
    expect(keep({ passwordHash: '$2b$10$old' }).passwordHash).to.equal('$2b$10$old');
    expect(keep({ passwordHash: '$2b$10$new' })).to.not.have.property('passwordHash');
    expect(keep({})).to.not.have.property('passwordHash');
  });

  it('keeps the later password change time; an unreadable or missing one leaves the old', () => {
    expect(keep({ passwordMtime: new Date(2_000_000) }).passwordMtime).to.deep.equal(new Date(2_000_000));
    expect(keep({ passwordMtime: new Date(500_000) }).passwordMtime).to.deep.equal(new Date(1_000_000));
    expect(keep({ passwordMtime: null }).passwordMtime).to.deep.equal(new Date(1_000_000));
    expect(keep({}).passwordMtime).to.deep.equal(new Date(1_000_000));
    const { passwordMtime: _mtime, ...never } = previous;
    expect(restrictAccount(never, { ...nothingRead, passwordMtime: new Date(3_000) }).passwordMtime).to.deep.equal(new Date(3_000));
    for (const passwordMtime of [null, undefined]) expect(restrictAccount(never, { ...nothingRead, passwordMtime })).to.not.have.property('passwordMtime');
  });

  it('keeps the old token records the new list still holds, field for field', () => {
    const a: ApiTokenRecord = { id: 'a', jti: 'ja', iat: 10, exp: 100 };
    expect(keep({ tokens: [a, { id: 'b', iat: 20 }] }).tokens).to.deep.equal(previous.tokens);
    expect(keep({ tokens: [] }).tokens).to.deep.equal([]);
    for (const changed of [{ ...a, id: 'x' }, { ...a, jti: 'jx' }, { ...a, iat: 11 }, { ...a, exp: 101 }]) {
      expect(keep({ tokens: [changed] }).tokens, JSON.stringify(changed)).to.deep.equal([]);
    }
    expect(keep({ tokens: [{ id: 'c', iat: 30 }, a] }).tokens).to.deep.equal([a]);
  });

  it('with a token list that does not parse, keeps the records whose jti (or id) its text still holds as a JSON string', () => {
    expect(keep({ tokensText: '[{"id":"a","jti":"ja","iat":10},' }).tokens).to.deep.equal([previous.tokens[0]]);
    expect(keep({ tokensText: '[{"id":"b","iat":20},,' }).tokens).to.deep.equal([previous.tokens[1]]);
    expect(keep({ tokensText: '[{"id":"a"}, ja' }).tokens).to.deep.equal([]);
    expect(keep({}).tokens).to.deep.equal([]);
  });

  it('keeps the name', () => {
    expect(keep({}).name).to.equal('ci');
  });
});
