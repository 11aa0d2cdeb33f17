/**
 * The identity provider's password-form limits (src/idp/login/password-guard.ts) on the memory
 * backend: the lockout per connector and username, the bound per interaction, one info line
 * per failure with what an operator needs, and no count for a directory that did not answer.
 * Across replicas and against slapd: test/e2e/idp-ldap-throttle.test.ts.
 */
import { expect } from 'chai';
import { Registry } from 'prom-client';
import { createPasswordGuard, MAX_ATTEMPTS_PER_INTERACTION, MAX_IDP_USERNAME_LENGTH, type PasswordGuard } from '../../../src/idp/login/password-guard.js';
import type { PasswordOutcome } from '../../../src/idp/login/login-flow.js';
import { createLoginConcurrency } from '../../../src/session/concurrency.js';
import { createLoginThrottle } from '../../../src/session/throttle.js';
import { createMemoryState } from '../../../src/state/memory.js';
import type { StateBackend } from '../../../src/state/state.js';

describe('idp: the password form\'s limits', function () {
  let state: StateBackend;
  let guard: PasswordGuard;
  let lines: { obj: Record<string, unknown>; msg: string }[];
  let checks: number;
  let delays: number;

  beforeEach(function () {
    state = createMemoryState();
    lines = [];
    checks = 0;
    delays = 0;
    const log = {
      info: (obj: object, msg?: string) => void lines.push({ obj: obj as Record<string, unknown>, msg: msg ?? "" }),
      error: (obj: object, msg?: string) => void lines.push({ obj: { level: 'error', ...obj }, msg: msg ?? "" }),
      warn: () => undefined,
    };
    const limits = { maxFailCount: 3, windowSeconds: 300, maxCacheSize: 100, maxConcurrentLogins: 2 };
    const throttle = createLoginThrottle({ state, limits, log, registry: new Registry(), now: Date.now, maxWaitMs: 50 });
    guard = createPasswordGuard({ state, throttle, concurrency: createLoginConcurrency(limits.maxConcurrentLogins), log, failureDelay: async () => void delays++ });
  });
  afterEach(() => state.close());

  const check = (outcome: PasswordOutcome) => async () => {
    checks++;
    return outcome;
  };
  let uids = 0;
  const post = (username: string, outcome: PasswordOutcome, uid = `uid-${++uids}`, connectorId = 'corp') =>
    guard.attempt({ uid, connectorId, username, requestId: `req-${uid}` }, check(outcome));

  it('locks a username of a connector after the failures, with the time left; another connector or name is apart', async function () {
    for (let i = 0; i < 3; i++) expect(await post('bob', { kind: 'wrong' })).to.deep.equal({ kind: 'wrong' });
    const locked = await post('bob', { kind: 'ok', sub: 'x' });
    expect(locked).to.have.property('kind', 'locked');
    expect((locked as { retryAfterS: number }).retryAfterS).to.be.within(299, 300);
    expect(checks, 'the directory asked only while not locked').to.equal(3);
    expect(await post('bob', { kind: 'ok', sub: 'x' }, undefined, 'other')).to.deep.equal({ kind: 'ok', sub: 'x' });
    expect(await post('alice', { kind: 'ok', sub: 'y' })).to.deep.equal({ kind: 'ok', sub: 'y' });
  });

  it('never checks more passwords than the allowance when they come at once', async function () {
    const outcomes = await Promise.all(Array.from({ length: 20 }, () => post('bob', { kind: 'wrong' })));
    expect(checks).to.be.at.most(3);
    expect(outcomes.filter((o) => o.kind === 'wrong')).to.have.lengthOf(checks);
  });

  it('logs each failure once at info with connector, username, reason and request id, and waits after it', async function () {
    await post('bob', { kind: 'wrong' }, 'u1');
    expect(lines).to.deep.equal([{ obj: { connector: 'corp', username: 'bob', reason: 'wrong username or password', requestId: 'req-u1' }, msg: 'identity provider: password login failed' }]);
    expect(delays).to.equal(1);
    await post('bob', { kind: 'ok', sub: 'x' }, 'u2');
    expect(lines).to.have.lengthOf(1);
  });

  it(`takes at most ${MAX_ATTEMPTS_PER_INTERACTION} posts on one interaction, whatever the usernames`, async function () {
    for (let i = 0; i < MAX_ATTEMPTS_PER_INTERACTION; i++) expect(await post(`user${i}`, { kind: 'wrong' }, 'same')).to.have.property('kind', 'wrong');
    expect(await post('carol', { kind: 'ok', sub: 'c' }, 'same')).to.deep.equal({ kind: 'exhausted' });
    expect(checks).to.equal(MAX_ATTEMPTS_PER_INTERACTION);
    expect(lines.at(-1)?.obj).to.include({ reason: 'too many attempts for one login page', requestId: 'req-same' });
  });

  it('refuses an overlong username without asking the directory', async function () {
    expect(await post('x'.repeat(MAX_IDP_USERNAME_LENGTH + 1), { kind: 'ok', sub: 'x' })).to.deep.equal({ kind: 'wrong' });
    expect(checks).to.equal(0);
  });

  it('does not count an attempt the directory did not answer', async function () {
    for (let i = 0; i < 5; i++) expect(await post('bob', { kind: 'unavailable', why: 'ECONNREFUSED' })).to.deep.equal({ kind: 'unavailable', why: 'ECONNREFUSED' });
    expect(await post('bob', { kind: 'ok', sub: 'x' })).to.deep.equal({ kind: 'ok', sub: 'x' });
  });

  it('logs a directory that did not answer at error, its reason as the connector gave it', async function () {
    await post('bob', { kind: 'unavailable', why: 'directory unreachable: ECONNREFUSED ldap.corp:636' });
    expect(lines.map((l) => [l.obj['level'], l.obj['reason'], l.msg])).to.deep.equal([
      ['error', 'directory unreachable: ECONNREFUSED ldap.corp:636', 'identity provider: password login failed'],
    ]);
  });
});
