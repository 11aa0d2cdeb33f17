/**
 * The identity provider's password-form limits (src/idp/login/password-guard.ts) on the memory
 * backend: the lockout per connector and canonical username and per directory entry, the bound per interaction, one info line
 * per failure with what an operator needs, and no count for a directory that did not answer.
 * Across replicas and against slapd: test/e2e/idp-ldap-throttle.test.ts.
 */
import { expect } from 'chai';
import { Registry } from 'prom-client';
import { createPasswordGuard, MAX_ATTEMPTS_PER_INTERACTION, MAX_IDP_USERNAME_LENGTH, type AdmitEntry, type PasswordGuard } from '../../../src/idp/login/password-guard.js';
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

  it('gives every spelling of a name one budget: case, surrounding white space, invisible characters, full-width letters', async function () {
    for (let i = 0; i < 3; i++) expect(await post('bob', { kind: 'wrong' })).to.deep.equal({ kind: 'wrong' });
    for (const spelling of ['Bob', 'BOB', ' bob', 'bob ', '\tbob\n', 'b\u200bob', 'ｂｏｂ', 'BoB']) {
      expect(await post(spelling, { kind: 'ok', sub: 'x' }), JSON.stringify(spelling)).to.have.property('kind', 'locked');
    }
    expect(checks, 'the directory asked only while not locked').to.equal(3);
  });

  /** A directory that resolves every name to one entry (its DN spelt with varying case), and counts the passwords it tries. */
  const oneEntry = (outcome: PasswordOutcome, tried: { n: number }) => async (admitEntry: AdmitEntry): Promise<PasswordOutcome> => {
    checks++;
    if (!(await admitEntry('uid=bob,ou=People,dc=example,dc=org'))) return { kind: 'wrong', why: 'entry locked' };
    tried.n++;
    return outcome;
  };
  const postTo = (username: string, check: (admitEntry: AdmitEntry) => Promise<PasswordOutcome>) => {
    const uid = `uid-${++uids}`;
    return guard.attempt({ uid, connectorId: 'corp', username, requestId: `req-${uid}` }, check);
  };

  it('counts the entry the directory resolved as well: names the fold does not join still share its budget', async function () {
    const tried = { n: 0 };
    for (const name of ['bob', 'robert', 'bobby']) expect(await postTo(name, oneEntry({ kind: 'wrong' }, tried))).to.deep.equal({ kind: 'wrong' });
    const locked = await postTo('rob', oneEntry({ kind: 'ok', sub: 'x' }, tried));
    expect(locked).to.have.property('kind', 'locked');
    expect((locked as { retryAfterS: number }).retryAfterS).to.be.within(299, 300);
    expect(tried.n, 'passwords tried against the entry').to.equal(3);
    expect(lines.at(-1)?.obj).to.include({ username: 'rob', reason: 'the directory entry is locked after too many failures' });
    // The refused attempt counted against its name too: `rob` is locked before the directory is asked.
    const before = checks;
    for (let i = 0; i < 2; i++) await postTo('rob', oneEntry({ kind: 'wrong' }, tried));
    expect(await postTo('rob', oneEntry({ kind: 'ok', sub: 'x' }, tried))).to.have.property('kind', 'locked');
    expect(checks - before, 'the third try of rob is refused by its name').to.equal(2);
  });

  it('refuses a login the entry\'s lock refused even when the connector answers ok regardless', async function () {
    const tried = { n: 0 };
    for (const name of ['bob', 'robert', 'bobby']) await postTo(name, oneEntry({ kind: 'wrong' }, tried));
    const careless = async (admitEntry: AdmitEntry): Promise<PasswordOutcome> => {
      await admitEntry('uid=bob,ou=people,dc=example,dc=org');
      return { kind: 'ok', sub: 'x' };
    };
    expect(await postTo('roberto', careless)).to.have.property('kind', 'locked');
  });

  it('clears the entry\'s count on a success and uncounts it when the directory did not answer', async function () {
    const tried = { n: 0 };
    for (const name of ['bob', 'robert']) await postTo(name, oneEntry({ kind: 'wrong' }, tried));
    for (let i = 0; i < 3; i++) await postTo(`down${i}`, oneEntry({ kind: 'unavailable', why: 'ECONNREFUSED' }, tried));
    expect(await postTo('bobby', oneEntry({ kind: 'ok', sub: 'x' }, tried)), 'two failures and three silences: not locked').to.deep.equal({ kind: 'ok', sub: 'x' });
    for (const name of ['b1', 'b2']) await postTo(name, oneEntry({ kind: 'wrong' }, tried));
    expect(await postTo('b3', oneEntry({ kind: 'ok', sub: 'x' }, tried)), 'the success cleared the earlier two').to.deep.equal({ kind: 'ok', sub: 'x' });
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
