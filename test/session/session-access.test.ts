/**
 * Who may list and end another account's sessions (src/session/session-access.ts): the right
 * `accounts, update, <name>`, never the `accounts, get` every read-only user holds.
 */
import { expect } from 'chai';
import { InvalidRequest, PermissionDenied } from '../../src/errors.js';
import { personKey } from '../../src/person.js';
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
      'p, frank, accounts, update, sso:https%3A%2F%2Fidp.example:alice',
      'p, role:session-admin, accounts, update, *',
      'g, gina, role:session-admin',
    ].join('\n')));
  });

  beforeEach(function () {
    asked = [];
    ended = [];
    const registry: Pick<SessionRegistry, 'list' | 'end'> = {
      list: async (person) => {
        asked.push(personKey(person));
        return [];
      },
      end: async (person, id, context) => {
        ended.push({ account: personKey(person), id, context });
        return { id, account: person.subject, kind: 'local', client: 'cli', address: '', createdAt: 0, expiresAt: 0, issuer: 'svc' };
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
    expect(asked).to.deep.equal(['local:svc:alice']);
    expect(ended).to.deep.equal([{ account: 'local:svc:alice', id: 'some-session', context: { via: 'list', source: { ip: '192.0.2.1' }, by: { id: 'erin', domain: 'svc' } } }]);
    expect(await refusal(access.list(erin, 'bob'))).to.be.instanceOf(PermissionDenied);
  });

  it('lets anyone list and end their own sessions without any right, and refuses an empty or overlong account', async function () {
    const frank = caller('frank');
    await access.list(frank, undefined);
    await access.list(frank, 'frank');
    await access.end(frank, 'mine', undefined, { ip: '192.0.2.1' });
    expect(asked).to.deep.equal(['local:svc:frank', 'local:svc:frank']);
    expect(ended).to.deep.equal([{ account: 'local:svc:frank', id: 'mine', context: { via: 'list', source: { ip: '192.0.2.1' } } }]);
    const empty = await refusal(access.list(frank, ''));
    expect(empty).to.be.instanceOf(InvalidRequest);
    expect((empty as Error).message).to.equal("query 'account' must be 1 to 256 characters");
    expect(await refusal(access.list(frank, 'a'.repeat(257)))).to.be.instanceOf(InvalidRequest);
  });

  it('asks the rights about the person it acts on: a line for local alice never reaches SSO alice, nor one for SSO alice local alice', async function () {
    const ssoKey = 'sso:https%3A%2F%2Fidp.example:alice';
    const erin = caller('erin'); // accounts, update, alice: the local account
    const err = await refusal(access.list(erin, ssoKey));
    expect(err).to.be.instanceOf(PermissionDenied);
    expect((err as Error).message).to.equal(`permission denied: accounts, update, ${ssoKey}`);
    expect(await refusal(access.end(erin, 'their-session', ssoKey, { ip: '192.0.2.1' }))).to.be.instanceOf(PermissionDenied);
    const frank = caller('frank'); // accounts, update on SSO alice's key only
    expect(await refusal(access.list(frank, 'alice'))).to.be.instanceOf(PermissionDenied);
    await access.list(frank, ssoKey);
    await access.list(erin, 'alice');
    // `*` covers every person.
    await access.list(caller('gina'), ssoKey);
    await access.list(caller('gina'), 'alice');
    expect(asked).to.deep.equal([ssoKey, 'local:svc:alice', ssoKey, 'local:svc:alice']);
    expect(ended).to.deep.equal([]);
  });

  it('takes a bare ?account= for the local account, never the SSO user of that sub, and names an SSO user by their person key', async function () {
    const ssoAlice: Principal = { username: 'alice', groups: [], issuer: 'https://idp.example', kind: 'sso', tokenId: 'sso-token', expiresAt: undefined };
    await access.list(ssoAlice, undefined);
    expect(asked, 'their own list').to.deep.equal(['sso:https%3A%2F%2Fidp.example:alice']);
    const named = await refusal(access.list(ssoAlice, 'alice'));
    expect(named, 'alice is the local account').to.be.instanceOf(PermissionDenied);
    expect((await refusal(access.end(ssoAlice, 'local-session', 'alice', { ip: '192.0.2.1' })))).to.be.instanceOf(PermissionDenied);
    await access.list(ssoAlice, 'sso:https%3A%2F%2Fidp.example:alice');
    const frank = caller('frank');
    await access.end(frank, 'their-session', 'sso:https%3A%2F%2Fidp.example:alice', { ip: '192.0.2.1' });
    expect(ended).to.deep.equal([{ account: 'sso:https%3A%2F%2Fidp.example:alice', id: 'their-session', context: { via: 'list', source: { ip: '192.0.2.1' }, by: { id: 'frank', domain: 'svc' } } }]);
    const erin = caller('erin');
    for (const bad of ['sso:https://idp.example:alice', 'local:other:alice', 'role:admin', 'sso:a:b:c']) {
      const err = await refusal(access.list(erin, bad));
      expect(err, bad).to.be.instanceOf(InvalidRequest);
      expect((err as Error).message).to.equal("query 'account' must be a local account's name, or a person's key such as 'sso:<issuer>:<sub>' (each part escaped)");
    }
  });
});
