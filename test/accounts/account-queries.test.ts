import { expect } from 'chai';
import { createAccounts } from '../../src/accounts/account-queries.js';
import type { AccountSettings } from '../../src/accounts/config.js';
import type { Principal } from '../../src/principal.js';

const alice: Principal = { username: 'alice', groups: [], issuer: 'svc', kind: 'session', tokenId: 'j', expiresAt: undefined };

function setup() {
  const asked: string[][] = [];
  const accounts = createAccounts({
    accounts: () => new Map<string, AccountSettings>([['bob', { name: 'bob', enabled: true, capabilities: ['login'], tokens: [] }]]),
    rights: {
      allows: (caller, resource, action, object) => {
        asked.push([caller.username, ...caller.groups, resource, action, object]);
        return false;
      },
    },
  });
  return { accounts, asked };
}

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err: unknown) {
    return err;
  }
  return undefined;
}

describe('accounts/accounts', () => {
  it('refuses a name no account can have before asking for rights (nothing reaches the decision cache)', () => {
    const { accounts, asked } = setup();
    const long = 'a'.repeat(16 * 1024);
    for (const name of [long, 'Bob', 'bob/x']) {
      expect(thrown(() => accounts.get(alice, name))).to.include({ code: 'invalid_request' });
      expect(thrown(() => accounts.authorize(alice, 'update', name))).to.include({ code: 'invalid_request' });
      expect(thrown(() => accounts.canI(alice, 'accounts', 'get', name))).to.include({ code: 'invalid_request' });
    }
    expect(thrown(() => accounts.get(alice, long))).to.have.property('message').that.has.length.below(200);
    expect(asked).to.deep.equal([]);
    expect(thrown(() => accounts.get(alice, 'bob'))).to.include({ code: 'permission_denied' });
    expect(asked).to.deep.equal([['alice', 'accounts', 'get', 'bob']]);
  });

  it('can-i refuses a resource the product never checks, before asking for rights', () => {
    const { accounts, asked } = setup();
    const err = thrown(() => accounts.canI(alice, 'x'.repeat(16 * 1024), 'get', 'y'));
    expect(err).to.include({ code: 'invalid_request', message: `unknown resource '${'x'.repeat(40)}…' (want one of accounts, extensions, applications, clusters, projects, logs, tokens)` });
    expect(asked).to.deep.equal([]);
    expect(accounts.canI(alice, 'applications', 'get', 'p/a')).to.equal(false);
    expect(asked).to.have.length(1);
  });

  it('can-i about extensions takes a method or *, refusing another action by name before asking', () => {
    const { accounts, asked } = setup();
    const err = thrown(() => accounts.canI(alice, 'extensions', 'invoke', '*/metrics'));
    expect(err).to.include({ code: 'invalid_request', message: 'unknown method "invoke" for extensions (want * or one of get, post, put, patch, delete, head, options); Argo CD\'s \'invoke\' is \'*\' here' });
    expect(asked).to.deep.equal([]);
    accounts.canI(alice, 'extensions', 'post', '*/metrics');
    accounts.canI(alice, 'extensions', '*', '*/metrics');
    expect(asked).to.have.length(2);
  });
});
