/** The session registry (src/session/registry.ts) against memory and a real redis-server. */
import { expect } from 'chai';
import { pino } from 'pino';
import { localPerson } from '../../src/person.js';
import { createLogoutRefusals, LogoutNotShared } from '../../src/session/logout-refusal.js';
import { createSessionRegistry, type NewSession } from '../../src/session/registry.js';
import { NotReplicated } from '../../src/state/state.js';
import { collectAudit } from '../helpers/audit.js';
import { createMemoryState } from '../../src/state/memory.js';
import { createRedisState } from '../../src/state/redis.js';
import type { StateBackend } from '../../src/state/state.js';
import { startRedis, type RedisPeer } from '../helpers/peers.js';
import { runRegistrySuite } from './registry-suite.js';

const log = pino({ level: 'silent' });

describe('session registry', function () {
  describe('on memory', function () {
    let shared: StateBackend;
    beforeEach(function () {
      shared = createMemoryState({ log });
    });
    afterEach(() => shared.close());
    // Both "replicas" of a test share the one in-process backend.
    runRegistrySuite('memory', { open: async () => ({ ...shared, close: async () => undefined }) });
  });

  describe('on Redis', function () {
    let redis: RedisPeer;
    before(async function () {
      this.timeout(20_000);
      redis = await startRedis();
    });
    after(async function () {
      await redis?.stop();
    });
    runRegistrySuite('redis', { open: async () => createRedisState({ url: redis.url, log }) });
  });
});

/**
 * A revocation that no Redis replica acknowledges (a replica resyncing): the logout someone asked
 * for is refused and logged as that, in one line; the bound's ending of the oldest session at a
 * login is no logout, and says what it is (issue 52, finding 10).
 */
describe('session registry: a revocation that cannot be shared', function () {
  const CAUSE = 'redis set at 127.0.0.1:6380: no replica acknowledged the write within 500 ms';
  let lines: { obj: Record<string, unknown>; msg: string }[];
  let clock: number;

  function registry() {
    const state = createMemoryState({ log });
    const refusals = createLogoutRefusals({});
    const revocation = {
      revoke: () => Promise.reject(refusals.explain(new NotReplicated(CAUSE))),
      revokedNow: () => false,
    };
    const warn = (obj: Record<string, unknown>, msg: string) => void lines.push({ obj, msg });
    return createSessionRegistry({ state, revocation, audit: collectAudit(), log: { warn, info: () => undefined } as never, now: () => clock, maxPerAccount: 2 });
  }

  const session = (id: string): NewSession => ({ id, account: 'alice', kind: 'local', client: 'cli', address: '192.0.2.7', issuer: 'svc', expiresAt: Math.floor(clock / 1000) + 3600 });

  beforeEach(function () {
    lines = [];
    clock = Date.parse('2026-03-01T10:00:30Z');
  });

  it('records a login past the bound, says in one line that the oldest session could not be ended, and calls nothing a logout', async function () {
    const sessions = registry();
    for (const id of ['s1', 's2', 's3']) {
      clock += 1000;
      await sessions.record(session(id));
    }
    expect((await sessions.list(localPerson('alice'))).map((l) => l.record.id)).to.deep.equal(['s3', 's2', 's1']);
    expect(lines).to.deep.equal([{
      obj: { account: 'alice', sessionId: 's1', reason: 'not_replicated' },
      msg: `sessions: 'alice' has more than 2 sessions and the oldest could not be ended now (${CAUSE}); the next login ends it`,
    }]);
  });

  it('refuses a logout someone asked for, and logs it as one line naming the session, the reason and the backend\'s words', async function () {
    const sessions = registry();
    await sessions.record(session('s1'));
    const refused = await sessions.logout(localPerson('alice'), 's1', Math.floor(clock / 1000) + 3600, { via: 'logout' }).then(() => undefined, (err: unknown) => err);
    expect(refused).to.be.instanceOf(LogoutNotShared);
    expect(lines).to.deep.equal([{
      obj: { account: 'alice', sessionId: 's1', via: 'logout', reason: 'not_replicated', cause: CAUSE },
      msg: 'logout refused: Redis took the revocation but no replica acknowledged it within the wait; check the Redis replicas',
    }]);
  });
});
