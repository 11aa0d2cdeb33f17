/**
 * The recheck of SSO users behind personal API tokens (src/ssotokens/recheck.ts), against a
 * stand-in connector whose answers the test sets: at most one upstream question per interval per
 * user (concurrent uses share it, replicas share it through the state backend); a refusal deletes
 * the user's tokens; an upstream that cannot answer keeps the last confirmed groups for the grace
 * only, then refuses with the reason.
 */
import { expect } from 'chai';
import { pino } from 'pino';
import type { Identity } from '../../connectors/connector.js';
import { Unauthenticated, Unavailable } from '../../src/errors.js';
import { createSealer } from '../../src/lib/sealed.js';
import { createMemoryState } from '../../src/state/memory.js';
import { createRecheck, RETRY_MS, UPSTREAM_DOWN_GRACE_MS, type CheckedUser, type IdentitySource } from '../../src/ssotokens/recheck.js';
import { recordKeyOf } from '../../src/ssotokens/records.js';
import type { StateBackend } from '../../src/state/state.js';

const EVERY_MS = 60_000;
const sealer = createSealer('recheck-test-key-0123456789abcdef', 'sso-token-identity');
const IDENTITY: Identity = { userId: 'bob', username: 'bob', emailVerified: false, groups: ['devs', 'qa'], connectorData: '{"dn":"uid=bob"}' };
const USER: CheckedUser = { sub: 'sub-bob', name: 'bob', connectorId: 'corp', identity: sealer.seal(JSON.stringify(IDENTITY), recordKeyOf('sub-bob')) };

type Answer = Identity | null | Error;

function setup(state: StateBackend = createMemoryState()) {
  let now = 1_000_000;
  let answer: Answer = IDENTITY;
  const asked: Identity[] = [];
  const refused: string[] = [];
  const lines: string[] = [];
  const source: IdentitySource = {
    find: () => Promise.resolve(undefined),
    refresh(_connector, identity) {
      asked.push(identity);
      return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer);
    },
  };
  const log = pino({ level: 'info' }, { write: (line: string) => lines.push((JSON.parse(line) as { msg: string }).msg) });
  const recheck = createRecheck({
    source, state, sealer: () => sealer, everyMs: () => EVERY_MS, log, now: () => now,
    onRefused: async (user, reason) => {
      refused.push(`${user.sub}: ${reason}`);
    },
  });
  return {
    recheck, asked, refused, lines,
    answer: (next: Answer) => (answer = next),
    advance: (ms: number) => (now += ms),
  };
}

async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (err: unknown) {
    return err as Error;
  }
  throw new Error('expected a rejection');
}

describe('ssotokens/recheck', function () {
  it('asks the connector at most once per interval, and concurrent uses share one question', async function () {
    const t = setup();
    const [a, b] = await Promise.all([t.recheck.current(USER), t.recheck.current(USER)]);
    expect(a.groups).to.deep.equal(['devs', 'qa']);
    expect(b).to.equal(a);
    expect(t.asked).to.have.length(1);
    expect(t.asked[0]).to.deep.equal(IDENTITY);
    t.advance(EVERY_MS - 1);
    expect(t.recheck.fresh(USER)).to.equal(a);
    await t.recheck.current(USER);
    expect(t.asked).to.have.length(1);
    t.advance(1);
    expect(t.recheck.fresh(USER)).to.equal(undefined);
    t.answer({ ...IDENTITY, groups: ['devs'] });
    expect((await t.recheck.current(USER)).groups).to.deep.equal(['devs']);
    expect(t.asked).to.have.length(2);
  });

  it('shares a check with another replica through the state backend', async function () {
    const state = createMemoryState();
    const one = setup(state);
    const other = setup(state);
    await one.recheck.current(USER);
    expect((await other.recheck.current(USER)).groups).to.deep.equal(['devs', 'qa']);
    expect(other.asked).to.have.length(0);
  });

  it('deletes the tokens of a user the connector refuses, and refuses them from then on without asking again', async function () {
    const t = setup();
    t.answer(null);
    const err = await rejection(t.recheck.current(USER));
    expect(err).to.be.instanceOf(Unauthenticated);
    expect(err.message).to.equal("'bob' is refused: connector 'corp' no longer knows the user; their personal API tokens were deleted");
    expect(t.refused).to.deep.equal(["sub-bob: connector 'corp' no longer knows the user"]);
    expect(t.recheck.fresh(USER)).to.equal(undefined);
    expect(await rejection(t.recheck.current(USER))).to.be.instanceOf(Unauthenticated);
    expect(t.asked).to.have.length(1);
  });

  it('keeps the last confirmed groups while the upstream is down, retrying at most every RETRY_MS, and refuses past the grace', async function () {
    const t = setup();
    await t.recheck.current(USER);
    t.advance(EVERY_MS);
    t.answer(Object.assign(new Error('connect ECONNREFUSED'), { reason: 'the directory is unreachable' }));
    expect((await t.recheck.current(USER)).groups).to.deep.equal(['devs', 'qa']);
    expect(t.lines.at(-1)).to.contain('the groups of the last confirmed check hold for now');
    expect(t.asked).to.have.length(2);
    // Within the retry pause: no new question, the held groups answer synchronously.
    t.advance(RETRY_MS - 1);
    expect(t.recheck.fresh(USER)?.groups).to.deep.equal(['devs', 'qa']);
    t.advance(1);
    expect(t.recheck.fresh(USER)).to.equal(undefined);
    await t.recheck.current(USER);
    expect(t.asked).to.have.length(3);
    t.advance(UPSTREAM_DOWN_GRACE_MS);
    const err = await rejection(t.recheck.current(USER));
    expect(err).to.be.instanceOf(Unavailable);
    expect(err.message).to.equal("the source of 'bob' (connector 'corp') cannot be reached to confirm them; their personal API tokens work again once it answers");
    expect(t.refused, 'a down directory deletes nothing').to.deep.equal([]);
    t.answer(IDENTITY);
    expect((await t.recheck.current(USER)).groups).to.deep.equal(['devs', 'qa']);
  });

  it('refuses to confirm a new token while the upstream cannot answer', async function () {
    const t = setup();
    t.answer(new Error('timeout'));
    const err = await rejection(t.recheck.confirmNow(USER, IDENTITY));
    expect(err).to.be.instanceOf(Unavailable);
    expect(err.message).to.equal("the source of 'bob' (connector 'corp') cannot be reached to confirm your groups; no token was made, try again later");
  });

  it('refuses an identity sealed under another server.secretkey', async function () {
    const t = setup();
    const other = createSealer('another-key-0123456789abcdefghij', 'sso-token-identity');
    const err = await rejection(t.recheck.current({ ...USER, identity: other.seal(JSON.stringify(IDENTITY), recordKeyOf(USER.sub)) }));
    expect(err.message).to.contain('cannot be opened');
    expect(t.asked).to.have.length(0);
  });
});
