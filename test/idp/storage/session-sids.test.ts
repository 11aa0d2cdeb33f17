/**
 * The `sid` indexes of svc's own clients (src/idp/storage/session-sids.ts), on memory state with
 * a stand-in for the adapter underneath: a Session save leads both clients' `sid`s to its uid,
 * each `svc-cli` refresh token adds its grant under its `sid`, and past the bound a login is
 * refused rather than left out of the index.
 */
import { expect } from 'chai';
import { errors, type Adapter, type AdapterPayload } from 'oidc-provider';
import { pino } from 'pino';
import { cliGrantsOfSid, MAX_CLI_GRANTS_PER_SID, sessionUidOfSid, withSessionSidIndex } from '../../../src/idp/storage/session-sids.js';
import { createMemoryState } from '../../../src/state/memory.js';

class Underneath implements Adapter {
  static readonly saved: string[] = [];
  constructor(readonly name: string) {}
  async upsert(id: string): Promise<void> {
    Underneath.saved.push(`${this.name}:${id}`);
  }
  async find(): Promise<undefined> {}
  async findByUserCode(): Promise<undefined> {}
  async findByUid(): Promise<undefined> {}
  async consume(): Promise<void> {}
  async destroy(): Promise<void> {}
  async revokeByGrantId(): Promise<void> {}
}

describe('idp/storage/session-sids', function () {
  it('leads the sid of svc and of svc-cli to the session, and no other client\'s', async function () {
    const state = createMemoryState({ log: pino({ level: 'silent' }) });
    const Sessions = new (withSessionSidIndex(Underneath, state))('Session');
    const payload: AdapterPayload = { uid: 'u1', authorizations: { svc: { sid: 'web-sid' }, 'svc-cli': { sid: 'cli-sid' }, wiki: { sid: 'wiki-sid' } } };
    await Sessions.upsert('s1', payload, 60);
    expect([await sessionUidOfSid(state, 'web-sid'), await sessionUidOfSid(state, 'cli-sid'), await sessionUidOfSid(state, 'wiki-sid')]).to.deep.equal(['u1', 'u1', null]);
  });

  it('keeps every svc-cli grant of a sid, and refuses a login past the bound, before the token is saved', async function () {
    const state = createMemoryState({ log: pino({ level: 'silent' }) });
    const RefreshTokens = new (withSessionSidIndex(Underneath, state))('RefreshToken');
    for (let i = 0; i < MAX_CLI_GRANTS_PER_SID; i++) await RefreshTokens.upsert(`rt${i}`, { clientId: 'svc-cli', sid: 'cli-sid', grantId: `g${i}` }, 3600);
    await RefreshTokens.upsert('rotated', { clientId: 'svc-cli', sid: 'cli-sid', grantId: 'g0' }, 3600);
    await RefreshTokens.upsert('other-client', { clientId: 'wiki', sid: 'cli-sid', grantId: 'gw' }, 3600);
    expect((await cliGrantsOfSid(state, 'cli-sid')).sort()).to.have.length(MAX_CLI_GRANTS_PER_SID).and.not.include('gw');

    Underneath.saved.length = 0;
    const refused = await RefreshTokens.upsert('one-more', { clientId: 'svc-cli', sid: 'cli-sid', grantId: 'g-new' }, 3600).catch((e: unknown) => e);
    expect(refused).to.be.instanceOf(errors.InvalidGrant);
    expect((refused as errors.InvalidGrant).error_detail).to.equal(`more than ${MAX_CLI_GRANTS_PER_SID} command-line logins through one provider session; log out at the provider and log in again`);
    expect(Underneath.saved).to.deep.equal([]);
  });
});
