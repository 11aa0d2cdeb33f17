/**
 * The standing of a token's user at its connector, as introspection reads it: asked at most once
 * per interval after the token's issue or the last check; a refusal makes the tokens issued
 * before it inactive, not those of a later login; a connector that cannot answer leaves the last
 * check standing within the grace only, with one try per RETRY_MS.
 */
import { expect } from 'chai';
import { pino } from 'pino';
import type { Identity } from '../../connectors/connector.js';
import { createAccountStore } from '../../src/idp/storage/federated-accounts.js';
import { createUserStanding, RETRY_MS, UPSTREAM_DOWN_GRACE_MS, type UserStanding } from '../../src/idp/user-standing.js';
import { createSealer } from '../../src/lib/sealed.js';
import { createMemoryState } from '../../src/state/memory.js';
import { fakePasswordConnector, singleConnector, type FakePasswordConnector } from '../helpers/fake-password-connector.js';

const RECHECK_MS = 60_000;
const SUB = 'sub-alice';
const ALICE: Identity = { userId: 'alice', username: 'alice', emailVerified: false, groups: ['devs'] };

describe('idp/user-standing: the directory still has the user behind a token', function () {
  let now: number;
  let connector: FakePasswordConnector;
  let down: boolean;
  let failedTries: number;
  let standing: UserStanding;

  beforeEach(async function () {
    now = 1_800_000_000_000;
    down = false;
    failedTries = 0;
    const log = pino({ level: 'silent' });
    const state = createMemoryState({ log });
    const accounts = createAccountStore(state, createSealer('user-standing-test-secret-key', 'idp-account'));
    await accounts.save(SUB, { connectorId: 'dir', identity: ALICE }, 3600);
    connector = fakePasswordConnector({ alice: { password: 'pw', identity: ALICE } });
    const refresh = connector.refresh?.bind(connector);
    const flaky = { ...connector, refresh: (identity: Identity, ctx: Parameters<NonNullable<typeof refresh>>[1]) => (down ? (failedTries++, Promise.reject(new Error('connect ECONNREFUSED'))) : (refresh as NonNullable<typeof refresh>)(identity, ctx)) };
    standing = createUserStanding({
      state, accounts, connectors: singleConnector('dir', flaky), recheckMs: () => RECHECK_MS, now: () => now, callbackUrl: 'http://svc.test/api/idp/callback', log,
    });
  });

  it('asks nothing within the interval after the issue; asks once it is past, and takes the fresh groups', async function () {
    const issued = now;
    now += RECHECK_MS - 1;
    expect(await standing.check(SUB, issued)).to.deep.equal({ active: true, groups: ['devs'] });
    expect(connector.refreshes()).to.equal(0);
    now += 2;
    connector.users.set('alice', { password: 'pw', identity: { ...ALICE, groups: ['devs', 'ops'] } });
    expect(await standing.check(SUB, issued)).to.deep.equal({ active: true, groups: ['devs', 'ops'] });
    expect(await standing.check(SUB, issued)).to.deep.equal({ active: true, groups: ['devs', 'ops'] });
    expect(connector.refreshes(), 'the check counts for the next interval').to.equal(1);
  });

  it('makes every token issued before a refusal inactive, and not a token of a later login', async function () {
    const issued = now;
    now += RECHECK_MS;
    connector.users.delete('alice');
    expect(await standing.check(SUB, issued)).to.deep.equal({ active: false, reason: 'the directory no longer has the user' });
    expect(await standing.check(SUB, issued - 5000)).to.have.property('active', false);
    now += 1000;
    expect(await standing.check(SUB, now)).to.deep.equal({ active: true, groups: ['devs'] });
  });

  it("takes a refusal the refresh grant recorded for the user's other tokens at once", async function () {
    const issued = now;
    now += 10;
    await standing.record(SUB, true);
    expect(await standing.check(SUB, issued)).to.have.property('active', false);
    expect(connector.refreshes()).to.equal(0);
  });

  it('keeps the last check within the grace while the connector cannot answer, trying again once per RETRY_MS, and not past the grace', async function () {
    const issued = now;
    now += RECHECK_MS;
    down = true;
    expect(await standing.check(SUB, issued)).to.deep.equal({ active: true, groups: ['devs'] });
    now += RETRY_MS - 1;
    expect(await standing.check(SUB, issued)).to.have.property('active', true);
    expect(failedTries, 'no new try within RETRY_MS').to.equal(1);
    now = issued + UPSTREAM_DOWN_GRACE_MS + 1;
    expect(await standing.check(SUB, issued)).to.deep.equal({ active: false, reason: 'the directory cannot be reached and the last check of the user is past its grace' });
  });

  it('answers inactive for a user the provider holds no record of', async function () {
    expect(await standing.check('sub-nobody', now)).to.deep.equal({ active: false, reason: 'the provider holds no record of the user' });
  });
});
