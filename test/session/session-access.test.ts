/**
 * Who may list and end another account's sessions (src/session/session-access.ts): the right
 * `accounts, update, <name>`, never the `accounts, get` every read-only user holds.
 */
import { expect } from 'chai';
import { InvalidRequest, PermissionDenied } from '../../src/errors.js';
import type { Principal } from '../../src/principal.js';
import { createRights, type Rights } from '../../src/rbac/rights.js';
import type { EndContext, SessionRegistry } from '../../src/session/registry.js';
import { createSessionAccess, type SessionAccess } from '../../src/session/session-access.js';
import { policyOf } from '../rbac/helpers.js';

const caller = (username: string, groups: readonly string[] = []): Principal => ({ username, groups, issuer: 'svc', kind: 'session', tokenId: `token-of-${username}`, expiresAt: undefined });

describe('session/session-access', function () {
  let rights: Rights;
  let asked: string[];
  let ended: { account: string; id: string; context: EndContext }[];
  let access: SessionAccess;

  before(async function () {
    rights = await createRights(policyOf([
      'p, role:viewer, accounts, get, *',
      'g, carol, role:viewer',
      'p, dave, accounts, get, alice',
      'p, erin, accounts, update, alice',
    ].join('\n')));
  });

  beforeEach(function () {
    asked = [];
    ended = [];
    const registry: Pick<SessionRegistry, 'list' | 'end'> = {
      list: async (account) => {
        asked.push(account);
        return [];
      },
      end: async (account, id, context) => {
        ended.push({ account, id, context });
        return { id, account, kind: 'local', client: 'cli', address: '', createdAt: 0, expiresAt: 0, issuer: 'svc' };
      },
    };
    access = createSessionAccess({ registry, rights });
  });

  async function refusal(action: Promise<unknown>): Promise<unknown> {
    return action.then(() => undefined, (err: unknown) => err);
  }

  it('refuses a caller with accounts, get but not update: 403 listing and ending another account\'s sessions', async function () {
    for (const who of [caller('carol'), caller('dave')]) {
      expect(rights.allows(who, 'accounts', 'get', 'alice'), `${who.username} reads alice`).to.equal(true);
      const listed = await refusal(access.list(who, 'alice'));
      expect(listed).to.be.instanceOf(PermissionDenied);
      expect((listed as PermissionDenied).message).to.equal('permission denied: accounts, update, alice');
      const end = await refusal(access.end(who, 'some-session', 'alice', { ip: '192.0.2.1' }));
      expect(end).to.be.instanceOf(PermissionDenied);
      expect((end as PermissionDenied).message).to.equal('permission denied: accounts, update, alice');
    }
    expect(asked, 'no registry read').to.deep.equal([]);
    expect(ended, 'no session ended').to.deep.equal([]);
  });

  it('lets accounts, update, <name> list and end that account\'s sessions, and no other account\'s', async function () {
    const erin = caller('erin');
    await access.list(erin, 'alice');
    await access.end(erin, 'some-session', 'alice', { ip: '192.0.2.1' });
    expect(asked).to.deep.equal(['alice']);
    expect(ended).to.deep.equal([{ account: 'alice', id: 'some-session', context: { via: 'list', source: { ip: '192.0.2.1' }, by: { id: 'erin' } } }]);
    expect(await refusal(access.list(erin, 'bob'))).to.be.instanceOf(PermissionDenied);
  });

  it('lets anyone list and end their own sessions without any right, and refuses an empty or overlong account', async function () {
    const frank = caller('frank');
    await access.list(frank, undefined);
    await access.list(frank, 'frank');
    await access.end(frank, 'mine', undefined, { ip: '192.0.2.1' });
    expect(asked).to.deep.equal(['frank', 'frank']);
    expect(ended).to.deep.equal([{ account: 'frank', id: 'mine', context: { via: 'list', source: { ip: '192.0.2.1' } } }]);
    const empty = await refusal(access.list(frank, ''));
    expect(empty).to.be.instanceOf(InvalidRequest);
    expect((empty as Error).message).to.equal("query 'account' must be 1 to 256 characters");
    expect(await refusal(access.list(frank, 'a'.repeat(257)))).to.be.instanceOf(InvalidRequest);
  });
});
