/**
 * The bound on pending logins (src/idp/storage/pending-bound.ts) on the memory state and on one
 * Redis, with an injected clock: per source, in all by bytes, given back at once by a finished
 * login and at expiry by an abandoned one.
 */
import { expect } from 'chai';
import { Registry, Counter } from 'prom-client';
import { createPendingBound, RECORD_OVERHEAD_BYTES, REFUSAL_LOG_EVERY_MS, type PendingBound, type PendingLimits } from '../../../src/idp/storage/pending-bound.js';
import { createMemoryState } from '../../../src/state/memory.js';
import { createRedisState } from '../../../src/state/redis.js';
import type { StateBackend } from '../../../src/state/state.js';
import { startRedis, type RedisPeer } from '../../helpers/peers.js';

/** An interaction of a usual size, as the adapter stores it. */
const BYTES = 1_500;
const CHARGE = BYTES + RECORD_OVERHEAD_BYTES;
const INTERACTION_TTL_MS = 600_000;
const LIMITS: PendingLimits = { perSourceBytes: 100 * CHARGE, totalBytes: 1_000 * CHARGE };

interface Line { readonly obj: Record<string, unknown>; readonly msg: string }

for (const backend of ['memory', 'redis'] as const) {
  describe(`idp: the bound on pending logins (${backend})`, function () {
    this.timeout(60_000);
    let redis: RedisPeer | undefined;
    let state: StateBackend;
    let t: number;
    let lines: Line[];
    let registry: Registry;
    let bound: PendingBound;
    let n = 0;

    before(async function () {
      if (backend === 'redis') redis = await startRedis();
    });
    after(async function () {
      await redis?.stop();
    });
    beforeEach(function () {
      t = 1_800_000_000_000 + n++ * 10 * INTERACTION_TTL_MS;   // each test its own time: earlier charges have expired
      state = redis === undefined ? createMemoryState({ now: () => t }) : createRedisState({ url: redis.url, log: { info() {}, warn() {} } });
      lines = [];
      registry = new Registry();
      const refusals = new Counter({ name: 'svc_idp_pending_refused_total', help: 'h', labelNames: ['kind', 'bound'] as const, registers: [registry] });
      bound = createPendingBound({ state, limits: LIMITS, now: () => t, log: { warn: (obj, msg) => lines.push({ obj: obj as Record<string, unknown>, msg }) }, refusals });
    });
    afterEach(async function () {
      await state.close();
    });

    let id = 0;
    const interaction = (source: string, bytes = BYTES) => ({ kind: 'Interaction' as const, key: `idp:Interaction:${backend}-${id++}`, source, bytes, ttlMs: INTERACTION_TTL_MS });
    const refusedCount = async (bound: string) =>
      ((await registry.getSingleMetric('svc_idp_pending_refused_total')?.get())?.values ?? []).filter((v) => v.labels['bound'] === bound).reduce((s, v) => s + v.value, 0);

    it('refuses only the source that holds its share, with one log line naming it, the bound and the figure, and a metric', async function () {
      let admitted = 0;
      for (let i = 0; i < 150; i++) if (await bound.admit(interaction('198.51.100.7'))) admitted++;
      expect(admitted).to.equal(100);
      expect(await bound.admit(interaction('203.0.113.5')), 'another source').to.equal(true);
      expect(lines, 'one line for the flood, not one per refusal').to.have.length(1);
      expect(lines[0]?.obj).to.deep.equal({ source: '198.51.100.7', bound: 'source', heldBytes: 100 * CHARGE, limitBytes: LIMITS.perSourceBytes, kind: 'Interaction' });
      expect(lines[0]?.msg).to.equal(`identity provider: 198.51.100.7 holds ${100 * CHARGE} bytes of pending logins, its bound is ${LIMITS.perSourceBytes} (SVC_IDP_PENDING_BYTES_PER_SOURCE); its new logins are refused until some finish or expire, other sources are not affected`);
      expect(await refusedCount('source')).to.equal(50);
    });

    it('never refuses logins that finish, however many: 3,000 over a whole window from one source, 30 times its share', async function () {
      const step = Math.ceil(INTERACTION_TTL_MS / 3_000);
      for (let i = 0; i < 3_000; i++) {
        const record = interaction('198.51.100.7');
        expect(await bound.admit(record), `login ${i}`).to.equal(true);
        // Saved again after the login step (renewed, not bounded again), then removed at its end.
        expect(await bound.admit({ ...record, bytes: BYTES + 200 })).to.equal(true);
        await bound.release(record.key);
        t += step;
      }
      expect(lines).to.have.length(0);
    });

    it('gives an abandoned login\'s share back at its expiry', async function () {
      for (let i = 0; i < 100; i++) expect(await bound.admit(interaction('198.51.100.7'))).to.equal(true);
      expect(await bound.admit(interaction('198.51.100.7'))).to.equal(false);
      t += INTERACTION_TTL_MS - 1;
      expect(await bound.admit(interaction('198.51.100.7')), 'before the expiry').to.equal(false);
      t += 1_000;
      // Redis gives back a bounded number of expired charges per call: a few calls free the rest.
      let admitted = 0;
      for (let i = 0; i < 100; i++) if (await bound.admit(interaction('198.51.100.7'))) admitted++;
      expect(admitted).to.be.at.least(90);
    });

    it('holds many sources together to the byte bound, and refuses past it with the total named', async function () {
      let admittedBytes = 0;
      for (let s = 0; s < 30; s++) {
        for (let i = 0; i < 60; i++) {
          const record = interaction(`10.0.${s}.1`, BYTES + s * 10);
          if (await bound.admit(record)) admittedBytes += record.bytes + RECORD_OVERHEAD_BYTES;
        }
      }
      expect(admittedBytes).to.be.at.most(LIMITS.totalBytes);
      expect(admittedBytes).to.be.above(LIMITS.totalBytes - 2 * CHARGE);
      expect(await refusedCount('total')).to.be.above(0);
      const total = lines.find((l) => l.obj['bound'] === 'total' && l.obj['heldBytes'] === admittedBytes);
      expect(total?.obj['limitBytes']).to.equal(LIMITS.totalBytes);
      expect(total?.msg).to.equal(`identity provider: pending logins of all sources hold ${admittedBytes} bytes, the bound is ${LIMITS.totalBytes} (SVC_IDP_PENDING_BYTES); new logins from ${String(total?.obj['source'])} are refused until some finish or expire`);
    });

    it('logs a refused source again once a minute has passed, not before, and each source apart', async function () {
      for (let i = 0; i < 101; i++) await bound.admit(interaction('198.51.100.7'));
      for (let i = 0; i < 101; i++) await bound.admit(interaction('198.51.100.8'));
      expect(lines.map((l) => l.obj['source'])).to.deep.equal(['198.51.100.7', '198.51.100.8']);
      t += REFUSAL_LOG_EVERY_MS - 1;
      expect(await bound.admit(interaction('198.51.100.7'))).to.equal(false);
      expect(lines, 'within the minute').to.have.length(2);
      t += 1;
      expect(await bound.admit(interaction('198.51.100.7'))).to.equal(false);
      expect(lines.map((l) => l.obj['source']), 'a minute after its last line').to.deep.equal(['198.51.100.7', '198.51.100.8', '198.51.100.7']);
      expect(await refusedCount('source')).to.equal(4);
    });
  });
}

/** The refusal log's memory of sources is the bound's own logic, the same on every backend: shown on memory. */
describe('idp: the bound on pending logins, its refusal lines', function () {
  it('remembers at most 1,000 logged sources: past them it forgets, and a source is logged again', async function () {
    const t = 1_800_000_000_000;
    const state = createMemoryState({ now: () => t });
    const lines: Line[] = [];
    let id = 0;
    const interaction = (source: string) => ({ kind: 'Interaction' as const, key: `idp:Interaction:log-${id++}`, source, bytes: BYTES, ttlMs: INTERACTION_TTL_MS });
    // No metric given: a refusal is counted nowhere, and still answered and logged.
    const tiny = createPendingBound({ state, limits: { perSourceBytes: CHARGE, totalBytes: 10_000 * CHARGE }, now: () => t, log: { warn: (obj, msg) => lines.push({ obj: obj as Record<string, unknown>, msg }) } });
    const source = (i: number) => `10.${Math.floor(i / 250)}.${i % 250}.1`;
    try {
      for (let i = 0; i <= 1_000; i++) {
        expect(await tiny.admit(interaction(source(i)))).to.equal(true);
        expect(await tiny.admit(interaction(source(i)))).to.equal(false);
      }
      expect(lines).to.have.length(1_001);
      // Within the minute: source 0 was forgotten when the 1,001st was logged, so it is logged again.
      expect(await tiny.admit(interaction(source(0)))).to.equal(false);
      expect(lines).to.have.length(1_002);
      expect(await tiny.admit(interaction(source(1_000)))).to.equal(false);
      expect(lines, 'the last one logged is remembered').to.have.length(1_002);
    } finally {
      await state.close();
    }
  });
});
