/**
 * The session registry's behaviour, run against each state backend (registry.test.ts: memory
 * and a real Redis). Each test uses accounts of its own, so a shared Redis needs no flush.
 */
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { NotFound } from '../../src/errors.js';
import { localPerson, ssoPerson, type Person } from '../../src/person.js';
import { createRevocation, type Revocation } from '../../src/session/revocation.js';
import { createSessionRegistry, sidKey, type NewSession, type SessionRegistry } from '../../src/session/registry.js';
import { serializeRecord, type SessionRecord } from '../../src/session/session-record.js';
import type { StateBackend } from '../../src/state/state.js';
import { collectAudit, type CollectedAudit } from '../helpers/audit.js';
import { until } from '../state/state-suite.js';

const silent = pino({ level: 'silent' });

export interface RegistrySuiteFactory {
  /** A client of the backend; with Redis each call is a new connection (another replica). */
  open(): Promise<StateBackend>;
}

interface Replica {
  readonly state: StateBackend;
  readonly revocation: Revocation;
  readonly registry: SessionRegistry;
  readonly audit: CollectedAudit;
}

export function runRegistrySuite(name: string, factory: RegistrySuiteFactory): void {
  describe(`session registry: ${name}`, function () {
    this.timeout(10_000);
    let clock = Date.parse('2026-03-01T10:00:30Z');
    const now = () => clock;
    let opened: Replica[] = [];
    let account = '';
    /** The local account `account`, and the SSO user whose `sub` is written the same. */
    const local = (): Person => localPerson(account);
    const sso = (): Person => ssoPerson('https://idp.example', account);

    async function replica(maxPerAccount = 50): Promise<Replica> {
      const state = await factory.open();
      const revocation = await createRevocation({ state, log: silent, now });
      const audit = collectAudit();
      const registry = createSessionRegistry({ state, revocation, audit, log: silent, now, maxPerAccount });
      const made = { state, revocation, registry, audit };
      opened.push(made);
      return made;
    }

    const session = (over: Partial<NewSession> = {}): NewSession => ({
      id: randomUUID(), account, kind: 'local', client: 'browser', address: '192.0.2.7', issuer: 'svc',
      expiresAt: Math.floor(clock / 1000) + 3600, ...over,
    });

    beforeEach(function () {
      clock = Date.parse('2026-03-01T10:00:30Z');
      account = `user-${randomUUID()}`;
    });
    afterEach(async function () {
      for (const r of opened) {
        await r.revocation.close();
        await r.state.close();
      }
      opened = [];
    });

    it('lists an account\'s sessions newest first, with every field', async function () {
      const { registry } = await replica();
      const first = session({ client: 'cli' });
      await registry.record(first);
      clock += 60_000;
      const second = session({ kind: 'sso', issuer: 'https://idp.example', sid: 'upstream-1' });
      await registry.record(second);
      const third = session({ client: 'api' });
      clock += 60_000;
      await registry.record(third);
      const listed = await registry.list(local());
      expect(listed.map((l) => l.record.id)).to.deep.equal([third.id, first.id]);
      expect(listed[1]?.record).to.deep.include({ kind: 'local', client: 'cli', address: '192.0.2.7', createdAt: Date.parse('2026-03-01T10:00:30Z') });
      expect(listed[0]?.lastUsedMs).to.equal(undefined);
      expect((await registry.list(sso())).map((l) => l.record.id), 'the SSO user of the same name').to.deep.equal([second.id]);
      expect(await registry.list(localPerson(`${account}-other`))).to.deep.equal([]);
    });

    it('ends a session: its token is revoked on another replica at once, the list drops it, the trail says so', async function () {
      const one = await replica();
      const two = await replica();
      const s = session();
      await one.registry.record(s);
      await one.registry.end(local(), s.id, { via: 'list', source: { ip: '192.0.2.9' } });
      expect(await one.revocation.isRevoked(s.id)).to.equal(true);
      await until(() => two.revocation.revokedNow(s.id) === true);
      expect(await two.registry.list(local())).to.deep.equal([]);
      const [event] = one.audit.of('session-ended');
      expect(event).to.deep.include({ category: 'session', type: 'end', outcome: 'success', user: { id: account, domain: 'svc' }, source: { ip: '192.0.2.9' } });
      expect(event?.svc).to.deep.equal({ via: 'list', sessionId: s.id, kind: 'local', client: 'browser' });
    });

    it('refuses to end a session the account does not have: NotFound, nothing revoked', async function () {
      const { registry, revocation } = await replica();
      const s = session();
      await registry.record(s);
      const err = await registry.end(localPerson(`${account}-other`), s.id, { via: 'list' }).catch((e: unknown) => e);
      expect(err).to.be.instanceOf(NotFound);
      expect((err as Error).message).to.equal(`no session '${s.id}' of '${account}-other'`);
      expect(await revocation.isRevoked(s.id)).to.equal(false);
    });

    it('keeps at most maxPerAccount sessions: the oldest past it ends, its token revoked', async function () {
      const { registry, revocation, audit } = await replica(3);
      const made: NewSession[] = [];
      for (let i = 0; i < 4; i++) {
        made.push(session());
        await registry.record(made[i] as NewSession);
        clock += 1000;
      }
      const ids = (await registry.list(local())).map((l) => l.record.id);
      expect(ids).to.deep.equal([made[3], made[2], made[1]].map((m) => m?.id));
      expect(await revocation.isRevoked(made[0]?.id ?? '')).to.equal(true);
      expect(audit.of('session-ended').map((e) => e.svc?.['via'])).to.deep.equal(['bound']);
    });

    it('shows the minute a session was last used, and drops expired ones', async function () {
      const { registry } = await replica();
      const s = session({ expiresAt: Math.floor(clock / 1000) + 600 });
      await registry.record(s);
      await registry.touch(local(), s.id, Date.parse('2026-03-01T10:03:00Z'), s.expiresAt);
      expect((await registry.list(local()))[0]?.lastUsedMs).to.equal(Date.parse('2026-03-01T10:03:00Z'));
      clock += 601_000;
      expect(await registry.list(local())).to.deep.equal([]);
    });

    it('follows a renewed SSO session to its new token, and ending it revokes both', async function () {
      const { registry, revocation } = await replica();
      const s = session({ kind: 'sso', issuer: 'https://idp.example', sid: 'sid-r' });
      await registry.record(s);
      const next = { id: randomUUID(), exp: s.expiresAt + 600 };
      await registry.renewed(sso(), s.id, next);
      const listed = await registry.list(sso());
      expect(listed.map((l) => l.record.id)).to.deep.equal([next.id]);
      expect(listed[0]?.record.earlier).to.deep.equal([{ id: s.id, exp: s.expiresAt }]);
      expect(await registry.endBySid('https://idp.example', 'sid-r', { via: 'backchannel' })).to.equal(1);
      expect(await revocation.isRevoked(next.id)).to.equal(true);
      expect(await revocation.isRevoked(s.id)).to.equal(true);
    });

    it('ends by upstream sid only the sessions of that sid and issuer', async function () {
      const { registry, revocation } = await replica();
      const a = session({ kind: 'sso', issuer: 'https://idp.example', sid: 'sid-a' });
      const b = session({ kind: 'sso', issuer: 'https://idp.example', sid: 'sid-b' });
      const other = session({ kind: 'sso', issuer: 'https://other.example', sid: 'sid-a' });
      for (const s of [a, b, other]) await registry.record(s);
      expect(await registry.endBySid('https://idp.example', 'sid-a', { via: 'backchannel' })).to.equal(1);
      expect(await revocation.isRevoked(a.id)).to.equal(true);
      expect(await revocation.isRevoked(b.id)).to.equal(false);
      expect(await revocation.isRevoked(other.id)).to.equal(false);
      expect(await registry.endBySid('https://idp.example', 'sid-unknown', { via: 'backchannel' })).to.equal(0);
    });

    it('ends every other session, keeping the given one', async function () {
      const { registry, revocation } = await replica();
      const keep = session();
      const others = [session(), session({ client: 'cli' })];
      for (const s of [keep, ...others]) await registry.record(s);
      expect(await registry.endOthers(local(), keep.id, { via: 'list' })).to.equal(2);
      expect((await registry.list(local())).map((l) => l.record.id)).to.deep.equal([keep.id]);
      for (const s of others) expect(await revocation.isRevoked(s.id)).to.equal(true);
    });

    it('logout of a token it never recorded still revokes it', async function () {
      const { registry, revocation, audit } = await replica();
      const id = randomUUID();
      await registry.logout(local(), id, Math.floor(clock / 1000) + 60, { via: 'logout' });
      expect(await revocation.isRevoked(id)).to.equal(true);
      expect(audit.of('session-ended')[0]?.svc).to.deep.equal({ via: 'logout', sessionId: id });
    });

    it('keeps an SSO user apart from the local account of the same name: list, end, bound, logout', async function () {
      const { registry, revocation } = await replica(2);
      const mine = session();
      await registry.record(mine);
      const theirs: NewSession[] = [];
      for (let i = 0; i < 3; i++) {
        clock += 1000;
        theirs.push(session({ kind: 'sso', issuer: 'https://idp.example' }));
        await registry.record(theirs[i] as NewSession);
      }
      expect((await registry.list(local())).map((l) => l.record.id), 'the bound counts each person apart').to.deep.equal([mine.id]);
      expect(await revocation.isRevoked(mine.id)).to.equal(false);
      expect(await revocation.isRevoked(theirs[0]?.id ?? '')).to.equal(true);
      const err = await registry.end(sso(), mine.id, { via: 'list' }).catch((e: unknown) => e);
      expect((err as Error).message).to.equal(`no session '${mine.id}' of '${account}'`);
      expect(await registry.endOthers(sso(), undefined, { via: 'list' })).to.equal(2);
      expect(await registry.endFromIssuer(account, 'https://idp.example', { via: 'backchannel' })).to.equal(0);
      expect((await registry.list(local())).map((l) => l.record.id)).to.deep.equal([mine.id]);
      await registry.logout(sso(), mine.id, mine.expiresAt, { via: 'logout' });
      expect((await registry.list(local())).map((l) => l.record.id), 'the token is revoked, the record not read as theirs').to.deep.equal([]);
      expect(await revocation.isRevoked(mine.id)).to.equal(true);
    });

    it('reads a record an older replica wrote under the bare name, for its own person only', async function () {
      const { registry, state, revocation } = await replica();
      const old = (over: Partial<SessionRecord>): SessionRecord => ({ ...session(over), createdAt: clock });
      const mine = old({});
      const theirs = old({ kind: 'sso', issuer: 'https://idp.example', sid: 'sid-old' });
      const ttl = { extendTtlMs: 3_600_000 };
      for (const r of [mine, theirs]) await state.hashSet(`sessions:${account}`, r.id, serializeRecord(r), ttl);
      await state.hashSet(`sessions-used:${account}`, mine.id, String(Date.parse('2026-03-01T10:00:00Z')), ttl);
      await state.hashSet(sidKey('https://idp.example', 'sid-old'), theirs.id, account, ttl);
      const listed = await registry.list(local());
      expect(listed.map((l) => l.record.id)).to.deep.equal([mine.id]);
      expect(listed[0]?.lastUsedMs).to.equal(Date.parse('2026-03-01T10:00:00Z'));
      expect((await registry.list(sso())).map((l) => l.record.id)).to.deep.equal([theirs.id]);
      const err = await registry.end(sso(), mine.id, { via: 'list' }).catch((e: unknown) => e);
      expect(err).to.be.instanceOf(NotFound);
      expect(await registry.endBySid('https://idp.example', 'sid-old', { via: 'backchannel' })).to.equal(1);
      expect(await revocation.isRevoked(theirs.id)).to.equal(true);
      await registry.end(local(), mine.id, { via: 'list' });
      expect(await state.hashGetAll(`sessions:${account}`)).to.deep.equal({});
    });

    it('records a session first seen in use only once', async function () {
      const { registry } = await replica();
      const s = session({ client: 'cli' });
      await registry.recordIfAbsent(s);
      clock += 5000;
      await registry.recordIfAbsent({ ...s, client: 'api' });
      const listed = await registry.list(local());
      expect(listed.map((l) => [l.record.client, l.record.createdAt])).to.deep.equal([['cli', Date.parse('2026-03-01T10:00:30Z')]]);
    });
  });
}
