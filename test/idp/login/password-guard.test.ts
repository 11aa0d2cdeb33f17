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
import { INTERACTION_TTL_S } from '../../../src/idp/lifetimes.js';
import { createLoginConcurrency, type LoginConcurrency } from '../../../src/session/concurrency.js';
import { createLoginThrottle, type LoginThrottle } from '../../../src/session/throttle.js';
import { createMemoryState } from '../../../src/state/memory.js';
import type { StateBackend } from '../../../src/state/state.js';

describe('idp: the password form\'s limits', function () {
  let state: StateBackend;
  let guard: PasswordGuard;
  let lines: { obj: Record<string, unknown>; msg: string }[];
  let checks: number;
  let delays: number;

  let recorded: string[];

  /** The guard over fresh memory state: maxFailCount 3, a 300 s window, 2 checks at once, unless `options` say otherwise. */
  function build(options: { windowSeconds?: number; concurrency?: LoginConcurrency; throttle?: (real: LoginThrottle) => LoginThrottle } = {}): void {
    state = createMemoryState();
    lines = [];
    recorded = [];
    checks = 0;
    delays = 0;
    const log = {
      info: (obj: object, msg?: string) => void lines.push({ obj: obj as Record<string, unknown>, msg: msg ?? "" }),
      error: (obj: object, msg?: string) => void lines.push({ obj: { level: 'error', ...obj }, msg: msg ?? "" }),
      warn: () => undefined,
    };
    const limits = { maxFailCount: 3, windowSeconds: options.windowSeconds ?? 300, maxCacheSize: 100, maxConcurrentLogins: 2 };
    const real = createLoginThrottle({ state, limits, log, registry: new Registry(), now: Date.now, maxWaitMs: 50 });
    const throttle = options.throttle?.(real) ?? real;
    const outcomes = { record: (method: string, connector: string, reason: string) => void recorded.push(`${method} ${connector} ${reason}`) };
    guard = createPasswordGuard({ state, throttle, concurrency: options.concurrency ?? createLoginConcurrency(limits.maxConcurrentLogins), log, failureDelay: async () => void delays++, outcomes });
  }

  beforeEach(function () {
    build();
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

  /** The attempts counted under a throttle name (0 when none). */
  const counted = async (name: string): Promise<number> => Number((await state.get(`login-failures:${name}`)) ?? 0);
  /** A check that answers `outcome` once `open` is called: attempts held in flight. */
  function heldCheck(outcome: PasswordOutcome, entry?: string): { check: (admitEntry: AdmitEntry) => Promise<PasswordOutcome>; open: () => void } {
    let open: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => { open = resolve; });
    return {
      check: async (admitEntry) => {
        checks++;
        if (entry !== undefined && !(await admitEntry(entry))) return { kind: 'wrong' };
        await gate;
        return outcome;
      },
      open: () => open(),
    };
  }

  it('counts each outcome once and logs its reason once: ok, wrong password, unknown user, a silent directory, an overlong name, a lock, a used-up page', async function () {
    await post('amy', { kind: 'ok', sub: 'a' });
    await post('amy', { kind: 'wrong', why: 'wrong password' });
    await post('zed', { kind: 'wrong', why: 'unknown user' });
    await post('zed', { kind: 'wrong' });
    await post('amy', { kind: 'unavailable', why: 'ECONNREFUSED' });
    await post('x'.repeat(MAX_IDP_USERNAME_LENGTH + 1), { kind: 'ok', sub: 'x' });
    for (let i = 0; i < 3; i++) await post('cat', { kind: 'wrong' });
    await post('cat', { kind: 'ok', sub: 'c' });
    for (let i = 0; i <= MAX_ATTEMPTS_PER_INTERACTION; i++) await post(`page${i}`, { kind: 'ok', sub: 'p' }, 'one-page');
    expect(recorded.slice(0, 10)).to.deep.equal([
      'idp-password corp ok', 'idp-password corp wrong-password', 'idp-password corp unknown-user', 'idp-password corp wrong-password',
      'idp-password corp unavailable', 'idp-password corp unknown-user', 'idp-password corp wrong-password', 'idp-password corp wrong-password',
      'idp-password corp wrong-password', 'idp-password corp locked',
    ]);
    expect(recorded.at(-1)).to.equal('idp-password corp locked');
    expect(lines.slice(0, 9).map((l) => l.obj['reason'])).to.deep.equal([
      'wrong password', 'unknown user', 'wrong username or password', 'ECONNREFUSED', `username longer than ${MAX_IDP_USERNAME_LENGTH} characters`,
      'wrong username or password', 'wrong username or password', 'wrong username or password', 'locked after too many failures',
    ]);
    expect(lines.at(-1)?.obj['reason']).to.equal('too many attempts for one login page');
  });

  it(`checks a username of exactly ${MAX_IDP_USERNAME_LENGTH} characters, and keeps a page's count as long as its interaction`, async function () {
    expect(await post('y'.repeat(MAX_IDP_USERNAME_LENGTH), { kind: 'ok', sub: 'y' }, 'page-a')).to.deep.equal({ kind: 'ok', sub: 'y' });
    expect(checks).to.equal(1);
    expect(await state.ttlMs('idp:form-attempts:page-a')).to.be.within(INTERACTION_TTL_S * 1000 - 5_000, INTERACTION_TTL_S * 1000);
  });

  it('says a lockout without an end (window 0) has no time to wait', async function () {
    build({ windowSeconds: 0 });
    for (let i = 0; i < 3; i++) await post('bob', { kind: 'wrong' });
    expect(await post('bob', { kind: 'ok', sub: 'x' })).to.deep.equal({ kind: 'locked', retryAfterS: undefined });
  });

  it('answers busy, not locked, while attempts in flight hold a name\'s allowance, and counts nothing for it', async function () {
    build({ concurrency: createLoginConcurrency(10) });
    const held = Array.from({ length: 3 }, () => heldCheck({ kind: 'ok', sub: 'b' }));
    const inFlight = held.map((h) => guard.attempt({ uid: `held-${++uids}`, connectorId: 'corp', username: 'bob', requestId: 'r' }, h.check));
    expect(await post('Bob', { kind: 'ok', sub: 'b' })).to.deep.equal({ kind: 'busy' });
    expect(recorded.at(-1)).to.equal('idp-password corp busy');
    expect(lines.at(-1)?.obj['reason']).to.equal('too many attempts in flight');
    for (const h of held) h.open();
    await Promise.all(inFlight);
    expect(await counted('idp:corp:bob')).to.equal(0);
  });

  it('answers busy while attempts in flight hold an entry\'s allowance, and hands the name\'s attempt back', async function () {
    build({ concurrency: createLoginConcurrency(10) });
    const dn = 'uid=bob,ou=people,dc=example,dc=org';
    const held = ['bob', 'robert', 'bobby'].map((name) => ({ name, ...heldCheck({ kind: 'wrong' }, dn) }));
    const inFlight = held.map((h) => guard.attempt({ uid: `held-${++uids}`, connectorId: 'corp', username: h.name, requestId: 'r' }, h.check));
    expect(await postTo('rob', heldCheck({ kind: 'ok', sub: 'b' }, dn).check)).to.deep.equal({ kind: 'busy' });
    expect(recorded.at(-1)).to.equal('idp-password corp busy');
    expect(lines.at(-1)?.obj['reason']).to.equal('too many attempts in flight for the directory entry');
    expect(await counted('idp:corp:rob'), 'the name\'s attempt handed back').to.equal(0);
    for (const h of held) h.open();
    await Promise.all(inFlight);
  });

  it('keys the entry\'s count on its DN folded to lower case, one count per entry', async function () {
    const tried = { n: 0 };
    await postTo('bob', oneEntry({ kind: 'wrong' }, tried));
    expect(await counted('idp-entry:corp:uid=bob,ou=people,dc=example,dc=org')).to.equal(1);
    for (const name of ['robert', 'bobby']) await postTo(name, oneEntry({ kind: 'wrong' }, tried));
    const other = async (admitEntry: AdmitEntry): Promise<PasswordOutcome> => ((await admitEntry('uid=alice,ou=people,dc=example,dc=org')) ? { kind: 'ok', sub: 'a' } : { kind: 'wrong' });
    expect(await postTo('alice', other), 'another entry is apart').to.deep.equal({ kind: 'ok', sub: 'a' });
    expect(recorded.at(-1)).to.equal('idp-password corp ok');
  });

  it('admits one entry per attempt: a second call is refused', async function () {
    const answers: boolean[] = [];
    const twice = async (admitEntry: AdmitEntry): Promise<PasswordOutcome> => {
      answers.push(await admitEntry('uid=a,dc=x'), await admitEntry('uid=b,dc=x'));
      return { kind: 'wrong' };
    };
    await postTo('a', twice);
    expect(answers).to.deep.equal([true, false]);
  });

  it('after the entry\'s lock refused an attempt: a silent directory answers unavailable and uncounts the name, a wrong answer counts the name', async function () {
    const tried = { n: 0 };
    for (const name of ['bob', 'robert', 'bobby']) await postTo(name, oneEntry({ kind: 'wrong' }, tried));
    const silent = async (admitEntry: AdmitEntry): Promise<PasswordOutcome> => {
      await admitEntry('uid=bob,ou=people,dc=example,dc=org');
      return { kind: 'unavailable', why: 'ECONNRESET' };
    };
    expect(await postTo('rob', silent)).to.deep.equal({ kind: 'unavailable', why: 'ECONNRESET' });
    expect(await counted('idp:corp:rob')).to.equal(0);
    expect(await postTo('rob', oneEntry({ kind: 'wrong' }, tried))).to.have.property('kind', 'locked');
    expect(recorded.at(-1)).to.equal('idp-password corp locked');
    expect(await counted('idp:corp:rob')).to.equal(1);
  });

  it('answers busy past the cap of checks in flight, uncounted, and lets any other failure of the cap through', async function () {
    build({ concurrency: createLoginConcurrency(1) });
    const held = heldCheck({ kind: 'ok', sub: 'a' });
    const first = guard.attempt({ uid: 'held', connectorId: 'corp', username: 'amy', requestId: 'r' }, held.check);
    expect(await post('bob', { kind: 'ok', sub: 'b' })).to.deep.equal({ kind: 'busy' });
    expect(recorded.at(-1)).to.equal('idp-password corp busy');
    expect(lines.at(-1)?.obj['reason']).to.equal('too many logins in progress');
    expect(await counted('idp:corp:bob')).to.equal(0);
    held.open();
    await first;
    build({ concurrency: { inFlight: 0, acquire: () => { throw new Error('broken cap'); } } });
    const err = await post('bob', { kind: 'ok', sub: 'b' }).catch((e: unknown) => e);
    expect((err as Error).message).to.equal('broken cap');
    expect(await counted('idp:corp:bob')).to.equal(0);
  });

  it('counts a failure under the name as well when the entry was admitted: the name locks whatever entry it resolves to next', async function () {
    const tried = { n: 0 };
    for (let i = 0; i < 3; i++) await postTo('bob', oneEntry({ kind: 'wrong' }, tried));
    const before = checks;
    const elsewhere = async (admitEntry: AdmitEntry): Promise<PasswordOutcome> => {
      checks++;
      return (await admitEntry('uid=bob,ou=other,dc=example,dc=org')) ? { kind: 'ok', sub: 'b' } : { kind: 'wrong' };
    };
    expect(await postTo('bob', elsewhere)).to.have.property('kind', 'locked');
    expect(checks - before, 'refused by the name, before the directory').to.equal(0);
  });

  it('lets a failure of the throttle itself through, not taken for a lockout', async function () {
    build({ throttle: (real) => ({ ...real, admit: () => Promise.reject(new Error('state backend gone')) }) });
    const err = await post('bob', { kind: 'ok', sub: 'b' }).catch((e: unknown) => e);
    expect((err as Error).message).to.equal('state backend gone');
  });
});
