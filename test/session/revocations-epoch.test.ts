/**
 * The revocations epoch: a marker in the state backend whose absence means the record of
 * revocations was lost, and the cutoff it gives. Replicas are instances over one memory backend
 * (its pub/sub reaches them all); the Redis runs are in test/e2e/revocations-lost.test.ts.
 */
import { expect } from 'chai';
import { Registry } from 'prom-client';
import type { Principal } from '../../src/principal.js';
import {
  createRevocationsEpoch,
  formatMarker,
  LOST_METRIC,
  lostMessage,
  NOT_BEFORE_METRIC,
  parseMarker,
  refusedBefore,
  type RevocationsEpoch,
  type RevocationsEpochDeps,
  unreadMessage,
  CLOCK_SKEW_MS,
} from '../../src/session/revocations-epoch.js';
import { createMemoryState } from '../../src/state/memory.js';
import { StateUnavailable, type StateBackend } from '../../src/state/state.js';
import { MARKER_FIELD, REVOKED_HASH } from '../../src/session/revocation.js';

const T0 = Date.UTC(2026, 10, 28, 12, 0, 0);
const ID = '0f8fad5b-d9cb-469f-a165-70867728950e';

interface Logged {
  readonly level: 'info' | 'warn';
  readonly msg: string;
}

function recorder(): { log: { info: (o: unknown, m?: string) => void; warn: (o: unknown, m?: string) => void }; lines: Logged[] } {
  const lines: Logged[] = [];
  const line = (level: Logged['level']) => (o: unknown, m?: string) => lines.push({ level, msg: typeof o === 'string' ? o : m ?? '' });
  return { log: { info: line('info'), warn: line('warn') }, lines };
}

async function metric(registry: Registry, name: string): Promise<number | undefined> {
  return (await registry.getSingleMetric(name)?.get())?.values[0]?.value;
}

type AsRedis = StateBackend & { down: boolean; clock: () => number };

/** The same backend seen as Redis (the log line differs), able to stop answering, with Redis's own clock (TIME). */
function asRedis(state: StateBackend): AsRedis {
  const flags = { down: false, clock: Date.now };
  return new Proxy(state, {
    get(target, prop, receiver) {
      if (prop === 'kind') return 'redis';
      if (prop === 'down') return flags.down;
      if (prop === 'clock') return flags.clock;
      if (prop === 'time') return () => (flags.down ? Promise.reject(new StateUnavailable('redis is down')) : Promise.resolve(flags.clock()));
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function' || prop === 'close' || prop === 'connection') return value;
      return (...args: unknown[]) => (flags.down ? Promise.reject(new StateUnavailable('redis is down')) : (value as (...a: unknown[]) => unknown).apply(target, args));
    },
    set(_target, prop, value) {
      if (prop === 'clock') flags.clock = value as () => number;
      else if (prop === 'down') flags.down = value as boolean;
      else return false;
      return true;
    },
  }) as AsRedis;
}

const session = (issuedAt: number | undefined): Pick<Principal, 'kind' | 'issuedAt'> => ({ kind: 'session', ...(issuedAt !== undefined ? { issuedAt } : {}) });

describe('session/revocations-epoch', () => {
  let closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closers.reverse()) await close();
    closers = [];
  });

  /** No clock margin unless asked: it would make each start wait for it. */
  /** On a Redis stand-in whose clock is not set apart, Redis's clock is this replica's. */
  async function replica(state: StateBackend, now: () => number, registry = new Registry(), log = recorder().log, more: Partial<RevocationsEpochDeps> = {}): Promise<RevocationsEpoch> {
    if (state.kind === 'redis' && (state as AsRedis).clock === Date.now) (state as AsRedis).clock = now;
    const epoch = await createRevocationsEpoch({ state, log, now, registry, checkIntervalMs: 60_000, processStartMs: now(), clockSkewMs: 0, ...more });
    closers.push(() => epoch.close());
    return epoch;
  }

  function memory(): StateBackend {
    const state = createMemoryState();
    closers.push(() => state.close());
    return state;
  }

  describe('the rule', () => {
    it('refuses session, SSO and workload tokens issued before the cutoff, or without iat; keeps API tokens', () => {
      const cutoff = T0 + 250; // 12:00:00.250
      const second = Math.floor(T0 / 1000);
      expect(refusedBefore(cutoff, session(second - 1))).to.equal(true);
      expect(refusedBefore(cutoff, session(second)), 'the second of the loss: before or after it cannot be told').to.equal(true);
      expect(refusedBefore(T0, session(second)), 'a cutoff on the second keeps that second').to.equal(false);
      expect(refusedBefore(cutoff, session(second + 1))).to.equal(false);
      expect(refusedBefore(cutoff, session(undefined)), 'no iat: nothing says it came after').to.equal(true);
      expect(refusedBefore(cutoff, { kind: 'sso', issuedAt: second - 1 })).to.equal(true);
      expect(refusedBefore(cutoff, { kind: 'sso', issuedAt: second + 1 })).to.equal(false);
      expect(refusedBefore(cutoff, { kind: 'workload', issuedAt: second - 1 }), 'a workload token: revoked in state alone').to.equal(true);
      expect(refusedBefore(cutoff, { kind: 'workload', issuedAt: second + 1 })).to.equal(false);
      for (const kind of ['apiKey', 'ssoApiKey'] as const) expect(refusedBefore(cutoff, { kind, issuedAt: second - 3600 }), kind).to.equal(false);
      expect(refusedBefore(undefined, session(0)), 'no marker read yet').to.equal(false);
    });

    it('keeps the marker in the revocation list\'s own hash: the list is never lost without it', async () => {
      const state = memory();
      await replica(state, () => T0);
      expect(Object.keys(await state.hashGetAll(REVOKED_HASH))).to.deep.equal([MARKER_FIELD]);
      await state.delete(REVOKED_HASH); // an eviction of the list alone
      expect(await state.hashGet(REVOKED_HASH, MARKER_FIELD), 'the marker went with it').to.equal(null);
    });

    it('reads back only the markers it writes', () => {
      expect(parseMarker(formatMarker({ id: ID, atMs: T0 }))).to.deep.equal({ id: ID, atMs: T0 });
      for (const text of ['', ID, `${ID} `, `${ID} 0`, `${ID} -5`, `${ID} 1e12`, `${ID} 12.5`, `x ${T0}`, `${ID}  ${T0}`, `${ID} ${T0} x`, `${ID} 99999999999999999`]) {
        expect(parseMarker(text), JSON.stringify(text)).to.equal(undefined);
      }
      expect(lostMessage(T0 + 250)).to.equal('the record of revocations was lost at 2026-11-28T12:00:00.250Z; log in again');
    });
  });

  it('memory state: the first start finds no marker, so every session token issued before it is refused; said in the log and counted', async () => {
    const state = memory();
    const registry = new Registry();
    const { log, lines } = recorder();
    const epoch = await replica(state, () => T0, registry, log);
    expect(epoch.notBefore()).to.equal(T0);
    expect(parseMarker((await state.hashGet(REVOKED_HASH, MARKER_FIELD)) ?? '')?.atMs).to.equal(T0);
    expect(epoch.refusal(session(Math.floor(T0 / 1000) - 60))).to.equal(lostMessage(T0));
    expect(epoch.refusal(session(Math.floor(T0 / 1000) - 1))).to.equal(lostMessage(T0));
    expect(epoch.refusal(session(Math.floor(T0 / 1000)))).to.equal(undefined);
    expect(epoch.refusal({ kind: 'apiKey', issuedAt: 0 })).to.equal(undefined);
    expect(await metric(registry, LOST_METRIC)).to.equal(1);
    expect(await metric(registry, NOT_BEFORE_METRIC)).to.equal(T0 / 1000);
    expect(lines).to.deep.equal([{ level: 'info', msg: 'revocations: memory state keeps no revocations across restarts, so every session and workload token issued before this start (2026-11-28T12:00:00.000Z) is refused and people log in again; use Redis to keep sessions across restarts' }]);
  });

  it('memory state: the record begins when the process began, whatever the time it is read', async () => {
    const state = memory();
    const epoch = await createRevocationsEpoch({ state, log: recorder().log, now: () => T0 + 4_000, processStartMs: T0 });
    closers.push(() => epoch.close());
    expect(epoch.notBefore()).to.equal(T0);
  });

  it('a replica that begins a record in the middle of a second serves from the next one, so its first logins are kept', async () => {
    const state = asRedis(memory());
    const started = Date.now();
    const epoch = await replica(state, () => T0 + 700);
    expect(Date.now() - started).to.be.within(250, 900);
    expect(epoch.notBefore()).to.equal(T0 + 700);
    const joined = Date.now();
    await replica(state, () => T0 + 1_500); // a record of an earlier second: no wait
    expect(Date.now() - joined).to.be.below(200);
  });

  it('a replica that starts on a kept record joins it: same cutoff, nothing lost, nothing logged', async () => {
    const state = asRedis(memory());
    await replica(state, () => T0);
    const registry = new Registry();
    const { log, lines } = recorder();
    const later = await replica(state, () => T0 + 3_600_000, registry, log);
    expect(later.notBefore()).to.equal(T0);
    expect(await metric(registry, LOST_METRIC)).to.equal(0);
    expect(await metric(registry, NOT_BEFORE_METRIC)).to.equal(T0 / 1000);
    expect(lines).to.deep.equal([]);
  });

  it('Redis emptied: the next check writes a new marker, and both replicas refuse what came before it, each saying so once', async () => {
    const state = asRedis(memory());
    let t = T0;
    const [ra, rb] = [new Registry(), new Registry()];
    const [la, lb] = [recorder(), recorder()];
    const a = await replica(state, () => t, ra, la.log);
    const b = await replica(state, () => t, rb, lb.log);
    la.lines.length = 0; // a's first start is a loss too (nothing tells it from an emptied Redis)
    const moved: string[] = [];
    a.onMoved(() => moved.push('a'));
    const off = b.onMoved(() => moved.push('b'));
    t = T0 + 60_000;
    await state.delete(REVOKED_HASH); // FLUSHALL
    await a.check();
    await a.check(); // the marker is a's own now: nothing more
    for (let i = 0; i < 50 && b.notBefore() !== t; i++) await new Promise((r) => setTimeout(r, 10));
    expect([a.notBefore(), b.notBefore()], 'b heard it at once').to.deep.equal([t, t]);
    expect(moved.sort(), 'each told its listeners once').to.deep.equal(['a', 'b']);
    void off();
    const issued = Math.floor(T0 / 1000) + 30; // a session of between the two markers
    expect(a.refusal(session(issued))).to.equal(lostMessage(t));
    expect(b.refusal(session(issued))).to.equal(lostMessage(t));
    expect([await metric(ra, LOST_METRIC), await metric(rb, LOST_METRIC)]).to.deep.equal([2, 1]);
    expect(await metric(rb, NOT_BEFORE_METRIC)).to.equal(t / 1000);
    const line = 'revocations: the record of revocations in Redis was lost (its marker revocations-epoch is gone: a first start, FLUSHALL, a restart without persistence, or an eviction), so every session and workload token issued before 2026-11-28T12:01:00.000Z (and up to 0 ms after, for other replicas\' clocks) is refused and people log in again; API tokens are not affected. Give Redis persistence, replicas and maxmemory-policy noeviction to keep sessions';
    expect(la.lines).to.deep.equal([{ level: 'warn', msg: line }]);
    expect(lb.lines).to.deep.equal([{ level: 'warn', msg: line }]);
  });

  it('a replica that missed the message adopts a newer marker on its next check, never an older one', async () => {
    const state = asRedis(memory());
    let t = T0;
    const b = await replica(state, () => t);
    const newer = { id: ID, atMs: T0 + 5_000 };
    t = newer.atMs;
    await state.hashSet(REVOKED_HASH, MARKER_FIELD, formatMarker(newer)); // written by a replica b did not hear
    await b.check();
    expect(b.notBefore()).to.equal(newer.atMs);
    await state.hashSet(REVOKED_HASH, MARKER_FIELD, formatMarker({ id: '1f8fad5b-d9cb-469f-a165-70867728950e', atMs: T0 })); // an older one (a clock behind)
    await b.check();
    expect(b.notBefore(), 'a cutoff only moves forward').to.equal(newer.atMs);
  });

  it('writes the marker with Redis\'s clock (TIME), not the writing replica\'s', async () => {
    const state = asRedis(memory());
    state.clock = () => T0;
    const epoch = await replica(state, () => T0 + 1_000); // this replica's clock runs a second ahead
    expect(parseMarker((await state.hashGet(REVOKED_HASH, MARKER_FIELD)) ?? '')?.atMs).to.equal(T0);
    expect(epoch.notBefore()).to.equal(T0);
  });

  it('a marker later than its clock and margin (a replica or Redis with a clock ahead) is adopted with the present instead, and said', async () => {
    const state = asRedis(memory());
    await state.hashSet(REVOKED_HASH, MARKER_FIELD, formatMarker({ id: ID, atMs: T0 + 3_600_000 }));
    const { log, lines } = recorder();
    const epoch = await replica(state, () => T0, new Registry(), log, { clockSkewMs: 500 });
    expect(epoch.notBefore(), 'not an hour of refused logins').to.equal(T0);
    expect(epoch.refusal(session(Math.floor(T0 / 1000) + 1)), 'a login after the margin').to.equal(undefined);
    expect(lines.map((l) => l.msg)).to.include("revocations: the marker revocations-epoch of the record of revocations says 2026-11-28T13:00:00.000Z, later than this replica's clock and its margin (500 ms): its present is used instead, so logins made from now on are kept; check the clocks (NTP) of the replicas and Redis");
    await epoch.check();
    expect(epoch.notBefore(), 'the same marker read again changes nothing').to.equal(T0);
    const within = asRedis(memory());
    await within.hashSet(REVOKED_HASH, MARKER_FIELD, formatMarker({ id: ID, atMs: T0 + 400 }));
    expect((await replica(within, () => T0, new Registry(), recorder().log, { clockSkewMs: 500 })).notBefore(), 'within the margin: as written').to.equal(T0 + 400);
  });

  it('an unreadable marker counts as lost: replaced by a new one', async () => {
    const state = asRedis(memory());
    await state.hashSet(REVOKED_HASH, MARKER_FIELD, 'garbage');
    const registry = new Registry();
    const epoch = await replica(state, () => T0, registry);
    expect(epoch.notBefore()).to.equal(T0);
    expect(parseMarker((await state.hashGet(REVOKED_HASH, MARKER_FIELD)) ?? '')?.atMs).to.equal(T0);
    expect(await metric(registry, LOST_METRIC)).to.equal(1);
  });

  it('while the backend does not answer from the start, refuses the tokens of before this process, says so once, and the first answer decides', async () => {
    const state = asRedis(memory());
    await state.hashSet(REVOKED_HASH, MARKER_FIELD, formatMarker({ id: ID, atMs: T0 }));
    state.down = true;
    const started = T0 + 60_000;
    const { log, lines } = recorder();
    const epoch = await replica(state, () => started, new Registry(), log);
    expect(epoch.notBefore()).to.equal(undefined);
    const unread = unreadMessage(started);
    expect(unread).to.equal('this server has not read the record of revocations since it started at 2026-11-28T12:01:00.000Z (the state backend does not answer), so tokens issued before then are refused; log in again');
    expect(epoch.refusal(session(T0 / 1000 + 30)), 'a token of before this process: it may have been revoked').to.equal(unread);
    expect(epoch.refusal({ kind: 'workload', issuedAt: T0 / 1000 + 30 })).to.equal(unread);
    expect(epoch.refusal(session(started / 1000)), 'one issued since it started').to.equal(undefined);
    expect(epoch.refusal({ kind: 'apiKey', issuedAt: 0 }), 'API tokens live in the config store').to.equal(undefined);
    expect(epoch.refusal(session(0))).to.equal(unread);
    expect(lines).to.deep.equal([{ level: 'warn', msg: 'revocations: the state backend does not answer, so this process has not read the record of revocations: until it has, every session, SSO and workload token issued before it started (2026-11-28T12:01:00.000Z) is refused, since a revoked one could be among them; people log in again' }]);
    state.down = false;
    await epoch.check();
    expect(epoch.notBefore()).to.equal(T0);
    expect(epoch.refusal(session(T0 / 1000 + 30)), 'the record read: judged by the marker again').to.equal(undefined);
    expect(lines.slice(1)).to.deep.equal([{ level: 'info', msg: 'revocations: the record of revocations is read; tokens issued before this process started are judged by it again' }]);
    state.down = true;
    await epoch.check();
    expect(epoch.notBefore(), 'an outage later keeps the cutoff in force').to.equal(T0);
    expect(epoch.refusal(session(T0 / 1000 - 1))).to.equal(lostMessage(T0));
    expect(epoch.refusal(session(T0 / 1000 + 30))).to.equal(undefined);
  });

  it('with the marker read but the revocation list never loaded, still refuses the tokens of before this process', async () => {
    const state = asRedis(memory());
    await state.hashSet(REVOKED_HASH, MARKER_FIELD, formatMarker({ id: ID, atMs: T0 }));
    let loaded = false;
    const started = T0 + 60_000;
    const epoch = await replica(state, () => started, new Registry(), recorder().log, { listLoaded: () => loaded });
    expect(epoch.notBefore()).to.equal(T0);
    expect(epoch.refusal(session(T0 / 1000 + 30))).to.equal(unreadMessage(started));
    loaded = true;
    expect(epoch.refusal(session(T0 / 1000 + 30))).to.equal(undefined);
  });

  it('refuses tokens up to the clock margin after the marker (another replica\'s clock may run ahead), and serves once it is over', async () => {
    expect(CLOCK_SKEW_MS).to.equal(2_000);
    const state = asRedis(memory());
    const started = Date.now();
    const epoch = await replica(state, () => T0 + 700, new Registry(), recorder().log, { clockSkewMs: 500 });
    expect(Date.now() - started, 'waits for the second after marker + margin').to.be.within(1_250, 1_700);
    const second = Math.floor(T0 / 1000);
    expect(epoch.refusal(session(second)), 'the marker\'s second').to.equal(lostMessage(T0 + 700));
    expect(epoch.refusal(session(second + 1)), 'within the margin after it').to.equal(lostMessage(T0 + 700));
    expect(epoch.refusal(session(second + 2)), 'past the margin').to.equal(undefined);
    const defaulted = await createRevocationsEpoch({ state: memory(), log: recorder().log, now: () => T0, processStartMs: T0 });
    closers.push(() => defaulted.close());
    expect(defaulted.refusal(session(second)), 'memory state: one process, one clock, no margin').to.equal(undefined);
  });

  it('two replicas that find the marker gone at once agree on one (SET NX)', async () => {
    const state = asRedis(memory());
    const [a, b] = await Promise.all([replica(state, () => T0), replica(state, () => T0 + 7)]);
    const stored = parseMarker((await state.hashGet(REVOKED_HASH, MARKER_FIELD)) ?? '');
    expect(a.notBefore()).to.equal(stored?.atMs);
    expect(b.notBefore()).to.equal(stored?.atMs);
  });
});
