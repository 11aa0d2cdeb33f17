/**
 * The links from an upstream session to the provider sessions it logged in
 * (src/idp/storage/upstream-sessions.ts): per issuer and sid, and per issuer and sub; bounded
 * per key, ended sessions pruned when full, refused when still full; one upstream's text never
 * reaches another's links.
 */
import { expect } from 'chai';
import { pino } from 'pino';
import { createUpstreamLinks, MAX_LINKED_SESSIONS, TooManyLinkedSessions } from '../../../src/idp/storage/upstream-sessions.js';
import { createMemoryState } from '../../../src/state/memory.js';
import type { StateBackend } from '../../../src/state/state.js';

describe('idp/storage/upstream-sessions', function () {
  let state: StateBackend;
  beforeEach(() => {
    state = createMemoryState({ log: pino({ level: 'silent' }) });
  });
  afterEach(() => state.close());

  it('finds the provider sessions by the upstream sid and by its sub, per issuer', async function () {
    const links = createUpstreamLinks(state);
    await links.link({ issuer: 'https://a.example', sub: 'alice', sid: 's1' }, 'uid-1', 'acct-1', 60_000, async () => true);
    await links.link({ issuer: 'https://a.example', sub: 'alice' }, 'uid-2', 'acct-1', 60_000, async () => true);
    expect(await links.ofSid('https://a.example', 's1')).to.deep.equal([{ uid: 'uid-1', account: 'acct-1' }]);
    expect((await links.ofSub('https://a.example', 'alice')).map((l) => l.uid).sort()).to.deep.equal(['uid-1', 'uid-2']);
    expect(await links.ofSub('https://b.example', 'alice'), 'another issuer').to.deep.equal([]);
    await links.forget('https://a.example', { sid: 's1', sub: 'alice' }, 'uid-1');
    expect(await links.ofSid('https://a.example', 's1')).to.deep.equal([]);
    expect(await links.ofSub('https://a.example', 'alice')).to.deep.equal([{ uid: 'uid-2', account: 'acct-1' }]);
  });

  it('holds at most MAX_LINKED_SESSIONS per upstream user: ended ones make room, live ones refuse the next', async function () {
    const links = createUpstreamLinks(state);
    const alice = { issuer: 'https://a.example', sub: 'alice' };
    for (let i = 0; i < MAX_LINKED_SESSIONS; i++) await links.link(alice, `uid-${i}`, 'acct-1', 60_000, async () => true);
    const err = await links.link(alice, 'uid-new', 'acct-1', 60_000, async () => true).then(() => undefined, (e: unknown) => e);
    expect(err).to.be.instanceOf(TooManyLinkedSessions);
    expect((err as Error).message).to.equal(`the upstream user has ${MAX_LINKED_SESSIONS} sessions at the identity provider already; log out of one first`);
    await links.link(alice, 'uid-new', 'acct-1', 60_000, async (uid) => uid !== 'uid-3');
    const uids = (await links.ofSub(alice.issuer, 'alice')).map((l) => l.uid);
    expect(uids).to.have.length(MAX_LINKED_SESSIONS);
    expect(uids).to.include('uid-new').and.not.include('uid-3');
  });
});
