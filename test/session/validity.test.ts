/**
 * checkAccount, the account rules the local verifier runs on every use of an svc token: which API
 * token records a token matches, and the session's password binding. (Revocation is the
 * authenticator's, for every issuer: test/session/authenticate.test.ts.)
 */
import { expect } from 'chai';
import type { AccountSettings, ApiTokenRecord } from '../../src/accounts/config.js';
import { createTokenSigner, type TokenClaims } from '../../src/session/tokens.js';
import { checkAccount } from '../../src/session/validity.js';

const signer = createTokenSigner({ secretKey: () => 'validity-test-key-0123456789abcd', now: Date.now });
const HASH = '$2b$04$abcdefghijklmnopqrstuu5E9bO8y3C1zV8rY7QK3b3a5yS1kqG6m';

/** Alice with a password unless `account` is 'no password'. */
function deps(account: Partial<AccountSettings> | 'no password') {
  const base: AccountSettings = { name: 'alice', enabled: true, capabilities: ['apiKey', 'login'], tokens: [] };
  const full: AccountSettings = account === 'no password' ? base : { ...base, passwordHash: HASH, ...account };
  return { accounts: () => new Map([['alice', full]]), signer, disabledAt: () => undefined };
}

function reason(claims: TokenClaims, account: Partial<AccountSettings> | 'no password'): string | undefined {
  try {
    checkAccount(claims, deps(account));
    return undefined;
  } catch (err: unknown) {
    return (err as Error).message;
  }
}

const DELETED = "this API token of account 'alice' was deleted";
const CHANGED = "the password of account 'alice' changed after this token was issued; log in again";

describe('session/validity', () => {
  const apiKey = (jti: string, iat: number, exp?: number): TokenClaims => ({ username: 'alice', kind: 'apiKey', jti, iat, exp });

  it('matches an API token to its record by the random jti, not by the id', () => {
    const tokens: ApiTokenRecord[] = [{ id: 'ci', jti: 'uuid-2', iat: 200 }];
    expect(reason(apiKey('uuid-2', 200), { tokens })).to.equal(undefined);
    expect(reason(apiKey('uuid-1', 100), { tokens })).to.equal(DELETED); // the deleted 'ci' before it
    expect(reason(apiKey('ci', 200), { tokens })).to.equal(DELETED); // an id is not a jti
  });

  it('matches a record without jti (older versions: jti was the id) on id, iat and exp', () => {
    const tokens: ApiTokenRecord[] = [{ id: 'ci', iat: 100, exp: 900 }];
    expect(reason(apiKey('ci', 100, 900), { tokens })).to.equal(undefined);
    expect(reason(apiKey('ci', 101, 900), { tokens })).to.equal(DELETED);
    expect(reason(apiKey('ci', 100), { tokens })).to.equal(DELETED);
    expect(reason(apiKey('other', 100, 900), { tokens })).to.equal(DELETED);
  });

  it('does not scan the token list per request: a settings version is indexed once', () => {
    const records: ApiTokenRecord[] = Array.from({ length: 5000 }, (_, i) => ({ id: `t${i}`, jti: `uuid-${i}`, iat: 100 }));
    let reads = 0;
    const tokens = new Proxy(records, {
      get(target, key, receiver) {
        if (typeof key === 'string' && /^\d+$/.test(key)) reads++;
        return Reflect.get(target, key, receiver) as unknown;
      },
    });
    const account = deps({ tokens });
    for (let i = 0; i < 100; i++) checkAccount(apiKey('uuid-4999', 100), account);
    expect(reads).to.be.at.most(2 * records.length);
    expect(reason(apiKey('uuid-5000', 100), { tokens })).to.equal(DELETED);
  });

  it('refuses a session bound to another password hash than the current one', () => {
    const session = (pwh?: string): TokenClaims => ({ username: 'alice', kind: 'login', jti: 'j', iat: 100, exp: 200, ...(pwh !== undefined ? { pwh } : {}) });
    const bound = signer.passwordBinding(HASH);
    expect(bound).to.match(/^[A-Za-z0-9_-]{16}$/);
    expect(reason(session(bound), {})).to.equal(undefined);
    expect(reason(session(bound), { passwordHash: '$2b$04$another-hash' })).to.equal(CHANGED);
    expect(reason(session(bound), 'no password')).to.equal(CHANGED);
    expect(reason(session(), {})).to.equal(undefined); // issued before pwh existed: the mtime rule applies
    expect(reason(session(), { passwordMtime: new Date(101_000) })).to.equal(CHANGED);
  });

  it('refuses a token whose account is gone or lacks the token\'s capability', () => {
    expect(reason({ username: 'bob', kind: 'login', jti: 'j', iat: 100, exp: 200 }, {})).to.equal("account 'bob' does not exist");
    // admin is built in: absent, it is switched off (admin.enabled "false"), and said as a disabled account is.
    expect(reason({ username: 'admin', kind: 'login', jti: 'j', iat: 100, exp: 200 }, {})).to.equal("account 'admin' is disabled");
    expect(reason({ username: 'alice', kind: 'login', jti: 'j', iat: 100, exp: 200 }, { enabled: false })).to.equal("account 'alice' is disabled");
    expect(reason({ username: 'alice', kind: 'login', jti: 'j', iat: 100, exp: 200 }, { capabilities: ['apiKey'] })).to.equal("account 'alice' does not have the login capability");
    expect(reason(apiKey('uuid-1', 100), { capabilities: ['login'], tokens: [{ id: 'ci', jti: 'uuid-1', iat: 100 }] })).to.equal("account 'alice' does not have the apiKey capability");
  });

  it('keeps a session made in the very second of a password change, and refuses one made before it; API tokens survive it', () => {
    const session = (iat: number): TokenClaims => ({ username: 'alice', kind: 'login', jti: 'j', iat, exp: iat + 100 });
    expect(reason(session(100), { passwordMtime: new Date(100_000) })).to.equal(undefined);
    expect(reason(session(99), { passwordMtime: new Date(100_000) })).to.equal(CHANGED);
    const tokens: ApiTokenRecord[] = [{ id: 'ci', jti: 'uuid-1', iat: 50 }];
    expect(reason({ ...apiKey('uuid-1', 50), pwh: 'another-binding' }, { tokens, passwordMtime: new Date(100_000) })).to.equal(undefined);
  });

  it('refuses a token of the second its account was last seen disabled, or before, and keeps a later one', () => {
    const at = (disabledAt: number | undefined) => ({ ...deps({}), disabledAt: (name: string) => (name === 'alice' ? disabledAt : undefined) });
    const session = (iat: number): TokenClaims => ({ username: 'alice', kind: 'login', jti: 'j', iat, exp: iat + 100 });
    const why = (iat: number, disabledAt: number | undefined) => {
      try {
        checkAccount(session(iat), at(disabledAt));
        return undefined;
      } catch (err: unknown) {
        return (err as Error).message;
      }
    };
    const DISABLED = "account 'alice' was disabled after this token was issued; log in again";
    expect(why(100, undefined)).to.equal(undefined);
    expect(why(101, 100_500)).to.equal(undefined);
    expect(why(100, 100_000)).to.equal(DISABLED);
    expect(why(100, 100_500)).to.equal(DISABLED);
    expect(why(99, 100_000)).to.equal(DISABLED);
  });

  it('finds every record filed under one key: two records without jti with the same id', () => {
    const tokens: ApiTokenRecord[] = [{ id: 'ci', iat: 100, exp: 900 }, { id: 'ci', iat: 200, exp: 900 }];
    expect(reason(apiKey('ci', 100, 900), { tokens })).to.equal(undefined);
    expect(reason(apiKey('ci', 200, 900), { tokens })).to.equal(undefined);
    expect(reason(apiKey('ci', 150, 900), { tokens })).to.equal(DELETED);
  });

  it('derives the binding from server.secretkey: another key gives another binding', () => {
    const other = createTokenSigner({ secretKey: () => 'another-key-0123456789abcdef0123', now: Date.now });
    expect(other.passwordBinding(HASH)).to.not.equal(signer.passwordBinding(HASH));
    expect(signer.passwordBinding(HASH)).to.equal(signer.passwordBinding(HASH));
  });

  it('recomputes the cached binding when the key is rotated, and again when it is rotated back', () => {
    let key = 'first-key-0123456789abcdef012345';
    const rotating = createTokenSigner({ secretKey: () => key, now: Date.now });
    const first = rotating.passwordBinding(HASH);
    key = 'second-key-0123456789abcdef01234';
    const second = rotating.passwordBinding(HASH);
    expect(second).to.not.equal(first);
    expect(second).to.equal(createTokenSigner({ secretKey: () => key, now: Date.now }).passwordBinding(HASH));
    key = 'first-key-0123456789abcdef012345';
    expect(rotating.passwordBinding(HASH)).to.equal(first);
  });

  it('refuses a session issued before the account\'s sessionsNotBefore, keeps one of that second or later, and leaves API tokens alone', () => {
    const session = (iat: number): TokenClaims => ({ username: 'alice', kind: 'login', jti: 'j', iat, exp: iat + 100 });
    const cutoff = { sessionsNotBefore: new Date(200_000) };
    expect(reason(session(199), cutoff)).to.equal("the sessions of account 'alice' were ended after this token was issued (a second factor changed, or an operator ended them); log in again");
    expect(reason(session(200), cutoff)).to.equal(undefined);
    expect(reason(session(150), {})).to.equal(undefined);
    const tokens: ApiTokenRecord[] = [{ id: 'ci', jti: 'uuid-1', iat: 50 }];
    expect(reason(apiKey('uuid-1', 50), { ...cutoff, tokens })).to.equal(undefined);
  });
});
