/**
 * The behaviour every StateBackend must have, run against each implementation
 * (memory.test.ts, redis.test.ts). Tests use their own keys, so a shared Redis needs no flush.
 */
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { KEY_PREFIX, markKeyFor, type StateBackend } from '../../src/state/state.js';

export interface StateSuiteFactory {
  /** A client of the backend shared by every client opened during the same test. */
  open(): Promise<StateBackend>;
  /** The raw keys as the backend stores them, when it has such a notion (Redis). */
  rawKeys?(): Promise<string[]>;
}

const TTL = 150;
const PAST_TTL = 300;

export function runStateSuite(name: string, factory: StateSuiteFactory): void {
  describe(`state backend contract: ${name}`, function () {
    let opened: StateBackend[] = [];
    let ns = '';
    let state: StateBackend;
    const key = (k: string) => `test:${ns}:${k}`;

    async function open(): Promise<StateBackend> {
      const s = await factory.open();
      opened.push(s);
      return s;
    }

    beforeEach(async function () {
      ns = randomUUID();
      state = await open();
    });

    afterEach(async function () {
      await Promise.all(opened.map((s) => s.close()));
      opened = [];
    });

    it('reports its kind and answers ping', async function () {
      expect(state.kind).to.equal(name);
      await state.ping();
    });

    describe('strings', function () {
      it('returns null for an absent key and the value once set', async function () {
        expect(await state.get(key('a'))).to.equal(null);
        await state.set(key('a'), 'one');
        await state.set(key('a'), 'two');
        expect(await state.get(key('a'))).to.equal('two');
        expect(await state.ttlMs(key('a'))).to.equal(null);
      });

      it('expires a key set with ttlMs', async function () {
        await state.set(key('t'), 'v', { ttlMs: TTL });
        const left = await state.ttlMs(key('t'));
        expect(left).to.be.a('number').within(1, TTL);
        await sleep(PAST_TTL);
        expect(await state.get(key('t'))).to.equal(null);
        expect(await state.ttlMs(key('t'))).to.equal(null);
      });

      it('set without ttlMs removes an earlier TTL', async function () {
        await state.set(key('p'), 'v', { ttlMs: TTL });
        await state.set(key('p'), 'w');
        await sleep(PAST_TTL);
        expect(await state.get(key('p'))).to.equal('w');
      });

      it('rejects a TTL that is not a positive integer', async function () {
        for (const ttlMs of [0, -1, 1.5, Number.NaN]) {
          const err = await state.set(key('bad'), 'v', { ttlMs }).catch((e: unknown) => e);
          expect(err, String(ttlMs)).to.be.instanceOf(RangeError);
        }
      });

      it('setIfAbsent stores only when absent, and again after expiry', async function () {
        expect(await state.setIfAbsent(key('n'), 'first', { ttlMs: TTL })).to.equal(true);
        expect(await state.setIfAbsent(key('n'), 'second')).to.equal(false);
        expect(await state.get(key('n'))).to.equal('first');
        await sleep(PAST_TTL);
        expect(await state.setIfAbsent(key('n'), 'third')).to.equal(true);
        expect(await state.get(key('n'))).to.equal('third');
      });

      it('setIfAbsentFor stores a mark that expires with its owner, keeps one already there, and stores none without an owner', async function () {
        const mark = markKeyFor(key('owner'), key('mark'));
        expect(await state.setIfAbsentFor(mark, 'm', key('owner'))).to.equal('no-owner');
        expect(await state.get(mark)).to.equal(null);

        await state.set(key('owner'), 'o', { ttlMs: TTL });
        expect(await state.setIfAbsentFor(mark, 'first', key('owner'))).to.equal('set');
        expect(await state.setIfAbsentFor(mark, 'second', key('owner'))).to.equal('exists');
        expect(await state.get(mark)).to.equal('first');
        expect(await state.ttlMs(mark)).to.be.a('number').within(1, TTL);
        await sleep(PAST_TTL);
        expect(await state.get(mark), 'gone with its owner').to.equal(null);

        await state.set(key('forever'), 'o');
        const mark2 = markKeyFor(key('forever'), key('mark'));
        expect(await state.setIfAbsentFor(mark2, 'm', key('forever'))).to.equal('set');
        expect(await state.ttlMs(mark2), 'no TTL, as its owner').to.equal(null);
        expect(await state.get(mark2)).to.equal('m');
      });

      it('setIfAbsentFor with a former key: wins only if it also takes that key, with the same TTL', async function () {
        await state.set(key('owner'), 'o', { ttlMs: 60_000 });
        const mark = markKeyFor(key('owner'), key('mark'));
        expect(await state.setIfAbsentFor(mark, 'm', key('owner'), { formerKey: key('former') })).to.equal('set');
        expect(await state.get(key('former'))).to.equal('m');
        expect(await state.ttlMs(key('former'))).to.be.a('number').within(1, 60_000);

        await state.set(key('owner2'), 'o', { ttlMs: 60_000 });
        await state.set(key('former2'), 'earlier');
        const mark2 = markKeyFor(key('owner2'), key('mark'));
        expect(await state.setIfAbsentFor(mark2, 'm', key('owner2'), { formerKey: key('former2') }), 'marked under the former name').to.equal('exists');
        expect(await state.get(key('former2'))).to.equal('earlier');
        expect(await state.setIfAbsentFor(mark2, 'm', key('owner2'), { formerKey: key('former2') })).to.equal('exists');
      });

      it('delete removes strings and hashes, and ignores absent keys', async function () {
        await state.set(key('s'), 'v');
        await state.hashSet(key('h'), 'f', 'v');
        await state.delete(key('s'));
        await state.delete(key('h'));
        await state.delete(key('never'));
        expect(await state.get(key('s'))).to.equal(null);
        expect(await state.hashLength(key('h'))).to.equal(0);
      });
    });

    describe('take', function () {
      it('returns the value once and removes it; null when absent or expired', async function () {
        expect(await state.take(key('absent'))).to.equal(null);
        await state.set(key('once'), 'v', { ttlMs: 10_000 });
        expect(await state.take(key('once'))).to.equal('v');
        expect(await state.take(key('once'))).to.equal(null);
        expect(await state.get(key('once'))).to.equal(null);
        expect(await state.ttlMs(key('once'))).to.equal(null);
        await state.set(key('old'), 'v', { ttlMs: TTL });
        await sleep(PAST_TTL);
        expect(await state.take(key('old'))).to.equal(null);
      });

      it('gives the value to exactly one of two clients taking at the same time', async function () {
        const other = await open();
        for (let round = 0; round < 20; round++) {
          await state.set(key(`code${round}`), `value ${round}`);
          const got = await Promise.all([state.take(key(`code${round}`)), other.take(key(`code${round}`))]);
          expect(got.filter((v) => v !== null), `round ${round}`).to.deep.equal([`value ${round}`]);
        }
      });

      it('gives the value to exactly one of many concurrent calls', async function () {
        await state.set(key('many'), 'v');
        const got = await Promise.all(Array.from({ length: 30 }, () => state.take(key('many'))));
        expect(got.filter((v) => v === 'v')).to.have.length(1);
        expect(got.filter((v) => v === null)).to.have.length(29);
      });

      it('rejects a hash key as any string operation does, and leaves the hash', async function () {
        await state.hashSet(key('h'), 'a', '1');
        const err = await state.take(key('h')).catch((e: unknown) => e);
        expect((err as Error).message).to.match(/^WRONGTYPE/);
        expect(await state.hashGetAll(key('h'))).to.deep.equal({ a: '1' });
      });
    });

    describe('expire', function () {
      it('replaces the TTL of a string, a longer one too, and the key expires by it', async function () {
        await state.set(key('s'), 'v', { ttlMs: 10_000 });
        expect(await state.expire(key('s'), TTL)).to.equal(true);
        expect(await state.ttlMs(key('s'))).to.be.a('number').within(1, TTL);
        await sleep(PAST_TTL);
        expect(await state.get(key('s'))).to.equal(null);
      });

      it('gives a TTL to a hash, which then expires whole', async function () {
        await state.hashSet(key('h'), 'a', '1');
        await state.hashSet(key('h'), 'b', '2');
        expect(await state.ttlMs(key('h'))).to.equal(null);
        expect(await state.expire(key('h'), TTL)).to.equal(true);
        expect(await state.ttlMs(key('h'))).to.be.a('number').within(1, TTL);
        expect(await state.hashLength(key('h'))).to.equal(2);
        await sleep(PAST_TTL);
        expect(await state.hashGetAll(key('h'))).to.deep.equal({});
        expect(await state.hashLength(key('h'))).to.equal(0);
      });

      it('returns false for an absent key and does not create it', async function () {
        expect(await state.expire(key('absent'), 10_000)).to.equal(false);
        expect(await state.get(key('absent'))).to.equal(null);
        expect(await state.ttlMs(key('absent'))).to.equal(null);
      });

      it('rejects a TTL that is not a positive integer', async function () {
        await state.set(key('s'), 'v');
        for (const ttlMs of [0, -1, 1.5, Number.NaN]) {
          const err = await state.expire(key('s'), ttlMs).catch((e: unknown) => e);
          expect(err, String(ttlMs)).to.be.instanceOf(RangeError);
        }
        expect(await state.ttlMs(key('s'))).to.equal(null);
      });
    });

    describe('hashSet with extendTtlMs', function () {
      it('gives a new hash that TTL, and the hash expires whole', async function () {
        await state.hashSet(key('h'), 'a', '1', { extendTtlMs: TTL });
        expect(await state.ttlMs(key('h'))).to.be.a('number').within(1, TTL);
        await sleep(PAST_TTL);
        expect(await state.hashLength(key('h'))).to.equal(0);
      });

      it('raises a shorter TTL and keeps a longer one', async function () {
        await state.hashSet(key('h'), 'a', '1', { extendTtlMs: TTL });
        await state.hashSet(key('h'), 'b', '2', { extendTtlMs: 10_000 });
        expect(await state.ttlMs(key('h'))).to.be.a('number').above(5_000);
        await state.hashSet(key('h'), 'c', '3', { extendTtlMs: TTL });
        await sleep(PAST_TTL);
        expect(await state.hashGetAll(key('h'))).to.deep.equal({ a: '1', b: '2', c: '3' });
        expect(await state.ttlMs(key('h'))).to.be.a('number').above(5_000);
      });

      it('leaves a hash that exists without TTL without, and a plain hashSet keeps the TTL', async function () {
        await state.hashSet(key('forever'), 'a', '1');
        await state.hashSet(key('forever'), 'b', '2', { extendTtlMs: TTL });
        expect(await state.ttlMs(key('forever'))).to.equal(null);
        await state.hashSet(key('timed'), 'a', '1', { extendTtlMs: 10_000 });
        await state.hashSet(key('timed'), 'b', '2');
        expect(await state.ttlMs(key('timed'))).to.be.a('number').above(5_000);
      });

      it('rejects a TTL that is not a positive integer, and writes nothing', async function () {
        for (const extendTtlMs of [0, -1, 1.5, Number.NaN]) {
          const err = await state.hashSet(key('h'), 'a', '1', { extendTtlMs }).catch((e: unknown) => e);
          expect(err, String(extendTtlMs)).to.be.instanceOf(RangeError);
        }
        expect(await state.hashLength(key('h'))).to.equal(0);
      });

      it('rejects a string key as plain hashSet does', async function () {
        await state.set(key('s'), 'v');
        const err = await state.hashSet(key('s'), 'a', '1', { extendTtlMs: 10_000 }).catch((e: unknown) => e);
        expect((err as Error).message).to.match(/WRONGTYPE/);
        expect(await state.get(key('s'))).to.equal('v');
      });
    });

    describe('hashSet with maxFields', function () {
      it('takes new fields up to the bound, refuses one past it without writing it, and still updates a field it has', async function () {
        expect(await state.hashSet(key('h'), 'a', '1', { maxFields: 2 })).to.equal(true);
        expect(await state.hashSet(key('h'), 'b', '2', { maxFields: 2 })).to.equal(true);
        expect(await state.hashSet(key('h'), 'c', '3', { maxFields: 2 })).to.equal(false);
        expect(await state.hashSet(key('h'), 'a', '10', { maxFields: 2 })).to.equal(true);
        expect(await state.hashGetAll(key('h'))).to.deep.equal({ a: '10', b: '2' });
        expect(await state.hashSet(key('h'), 'c', '3'), 'without a bound, as before').to.equal(true);
        expect(await state.hashLength(key('h'))).to.equal(3);
      });

      it('with extendTtlMs: a refused field extends nothing, an accepted one does', async function () {
        await state.hashSet(key('h'), 'a', '1', { extendTtlMs: TTL, maxFields: 1 });
        expect(await state.hashSet(key('h'), 'b', '2', { extendTtlMs: 10_000, maxFields: 1 })).to.equal(false);
        expect(await state.ttlMs(key('h'))).to.be.a('number').within(1, TTL);
        expect(await state.hashSet(key('h'), 'a', '2', { extendTtlMs: 10_000, maxFields: 1 })).to.equal(true);
        expect(await state.ttlMs(key('h'))).to.be.a('number').above(5_000);
        expect(await state.hashGetAll(key('h'))).to.deep.equal({ a: '2' });
      });

      it('rejects a bound that is not a positive integer, and writes nothing', async function () {
        for (const maxFields of [0, -1, 1.5, Number.NaN]) {
          const err = await state.hashSet(key('h'), 'a', '1', { maxFields }).catch((e: unknown) => e);
          expect(err, String(maxFields)).to.be.instanceOf(RangeError);
        }
        expect(await state.hashLength(key('h'))).to.equal(0);
      });
    });

    describe('incr', function () {
      it('counts from 1 without TTL', async function () {
        expect(await state.incr(key('c'))).to.equal(1);
        expect(await state.incr(key('c'))).to.equal(2);
        expect(await state.get(key('c'))).to.equal('2');
        expect(await state.ttlMs(key('c'))).to.equal(null);
      });

      it('sets the TTL when it creates the key, and never extends it', async function () {
        expect(await state.incr(key('w'), { ttlMs: 2 * TTL })).to.equal(1);
        await sleep(TTL);
        expect(await state.incr(key('w'), { ttlMs: 2 * TTL })).to.equal(2);
        expect(await state.ttlMs(key('w'))).to.be.a('number').within(1, TTL + 20);
        await sleep(TTL + 50);
        expect(await state.get(key('w'))).to.equal(null);
        expect(await state.incr(key('w'), { ttlMs: 2 * TTL })).to.equal(1);
      });

      it('is atomic under concurrent calls', async function () {
        const results = await Promise.all(
          Array.from({ length: 50 }, () => state.incr(key('many'), { ttlMs: 10_000 })),
        );
        expect([...results].sort((a, b) => a - b)).to.deep.equal(Array.from({ length: 50 }, (_, i) => i + 1));
        expect(await state.get(key('many'))).to.equal('50');
      });

      it('rejects a value that is not an integer', async function () {
        await state.set(key('txt'), 'abc');
        const err = await state.incr(key('txt')).catch((e: unknown) => e);
        expect(err).to.be.instanceOf(Error);
        expect((err as Error).message).to.match(/not an integer/);
        expect((err as Error).name).not.to.equal('StateUnavailable');
      });
    });

    describe('decrement', function () {
      it('subtracts 1 from a positive count, keeps its TTL, and leaves absent keys and 0 alone', async function () {
        await state.incr(key('d'), { ttlMs: 10_000 });
        await state.incr(key('d'), { ttlMs: 10_000 });
        expect(await state.decrement(key('d'))).to.equal(1);
        expect(await state.ttlMs(key('d'))).to.be.a('number').above(5_000);
        expect(await state.decrement(key('d'))).to.equal(0);
        expect(await state.decrement(key('d'))).to.equal(0);
        expect(await state.get(key('d'))).to.equal('0');
        expect(await state.decrement(key('absent'))).to.equal(null);
        expect(await state.get(key('absent'))).to.equal(null);
        await state.set(key('txt'), 'abc');
        const err = await state.decrement(key('txt')).catch((e: unknown) => e);
        expect((err as Error).message).to.match(/not an integer/);
      });
    });

    describe('raiseTo', function () {
      it('creates an absent key with the TTL, raises a smaller value keeping its TTL, and never lowers one', async function () {
        expect(await state.raiseTo(key('r'), 3, { ttlMs: 10_000 })).to.equal(3);
        expect(await state.ttlMs(key('r'))).to.be.a('number').above(5_000);
        await state.expire(key('r'), 8_000);
        expect(await state.raiseTo(key('r'), 5, { ttlMs: 60_000 })).to.equal(5);
        expect(await state.ttlMs(key('r'))).to.be.a('number').within(1, 8_000);
        expect(await state.raiseTo(key('r'), 2, { ttlMs: 60_000 })).to.equal(5);
        expect(await state.incr(key('r'))).to.equal(6);
        expect(await state.raiseTo(key('forever'), 1)).to.equal(1);
        expect(await state.ttlMs(key('forever'))).to.equal(null);
        await state.set(key('txt'), 'abc');
        const err = await state.raiseTo(key('txt'), 1).catch((e: unknown) => e);
        expect((err as Error).message).to.match(/not an integer/);
        expect((err as Error).name).not.to.equal('StateUnavailable');
        const zero = await state.raiseTo(key('r'), 0).catch((e: unknown) => e);
        expect(zero).to.be.instanceOf(RangeError).with.property('message', 'atLeast must be a positive integer, got 0');
      });
    });

    describe('hashes', function () {
      it('sets, reads, counts and deletes fields', async function () {
        expect(await state.hashGetAll(key('h'))).to.deep.equal({});
        expect(await state.hashLength(key('h'))).to.equal(0);
        expect(await state.hashGet(key('h'), 'a')).to.equal(null);
        await state.hashSet(key('h'), 'a', '1');
        await state.hashSet(key('h'), 'b', '2');
        await state.hashSet(key('h'), 'a', '3');
        expect(await state.hashGet(key('h'), 'a')).to.equal('3');
        expect(await state.hashLength(key('h'))).to.equal(2);
        expect(await state.hashGetAll(key('h'))).to.deep.equal({ a: '3', b: '2' });
        await state.hashDelete(key('h'), 'a', 'missing');
        expect(await state.hashGetAll(key('h'))).to.deep.equal({ b: '2' });
        await state.hashDelete(key('h'));
        await state.hashDelete(key('h'), 'b');
        expect(await state.hashLength(key('h'))).to.equal(0);
        await state.set(key('h'), 'now a string');
        expect(await state.get(key('h'))).to.equal('now a string');
      });

      it('sets a field only when absent (HSETNX), of concurrent calls one wins, keeping the hash\'s TTL', async function () {
        const wins = await Promise.all(['x', 'y', 'z'].map((v) => state.hashSetIfAbsent(key('h'), 'm', v)));
        expect(wins.filter(Boolean)).to.have.length(1);
        const kept = await state.hashGet(key('h'), 'm');
        expect(await state.hashSetIfAbsent(key('h'), 'm', 'later')).to.equal(false);
        expect(await state.hashGet(key('h'), 'm')).to.equal(kept);
        await state.hashSet(key('t'), 'a', '1', { extendTtlMs: 60_000 });
        expect(await state.hashSetIfAbsent(key('t'), 'b', '2')).to.equal(true);
        expect(await state.ttlMs(key('t'))).to.be.within(50_000, 60_000);
      });

      it('tells the time by its own clock (Redis TIME), in ms', async function () {
        const before = Date.now();
        const t = await state.time();
        expect(Number.isSafeInteger(t)).to.equal(true);
        expect(t).to.be.within(before - 1_000, Date.now() + 1_000);
      });

      it('rejects a string operation on a hash key', async function () {
        await state.hashSet(key('h'), 'a', '1');
        const err = await state.get(key('h')).catch((e: unknown) => e);
        expect((err as Error).message).to.match(/^WRONGTYPE/);
      });
    });

    describe('pub/sub', function () {
      it('delivers in order to every subscriber of the channel, from another client', async function () {
        const other = await open();
        const got: string[] = [];
        const alsoGot: string[] = [];
        const offA = await other.subscribe(key('ch'), (m) => got.push(m));
        await other.subscribe(key('ch'), (m) => alsoGot.push(m));
        await other.subscribe(key('elsewhere'), (m) => got.push(`wrong channel: ${m}`));
        for (const m of ['1', '2', '3']) await state.publish(key('ch'), m);
        await until(() => got.length === 3 && alsoGot.length === 3);
        expect(got).to.deep.equal(['1', '2', '3']);
        expect(alsoGot).to.deep.equal(['1', '2', '3']);
        await offA();
        await offA();
        await state.publish(key('ch'), '4');
        await until(() => alsoGot.length === 4);
        await sleep(50);
        expect(got).to.deep.equal(['1', '2', '3']);
      });

      it('never calls a handler synchronously from publish()', async function () {
        const got: string[] = [];
        await state.subscribe(key('ch'), (m) => got.push(m));
        const published = state.publish(key('ch'), 'x');
        expect(got).to.deep.equal([]);
        await published;
        await until(() => got.length === 1);
      });

      it('keeps delivering when a handler throws', async function () {
        const got: string[] = [];
        await state.subscribe(key('ch'), () => {
          throw new Error('handler bug');
        });
        await state.subscribe(key('ch'), (m) => got.push(m));
        await state.publish(key('ch'), 'a');
        await state.publish(key('ch'), 'b');
        await until(() => got.length === 2);
      });

      it('tells a watcher the subscription is live before subscribe() resolves, and nothing more while connected', async function () {
        const other = await open();
        const calls: string[] = [];
        const alsoCalls: string[] = [];
        const got: string[] = [];
        const watch = (into: string[]) => ({ onLive: () => into.push('live'), onLost: () => into.push('lost') });
        const off = await other.subscribe(key('w'), (m) => got.push(m), watch(calls));
        expect(calls).to.deep.equal(['live']);
        // A second subscriber of a channel that is already active is told too.
        const alsoOff = await other.subscribe(key('w'), () => undefined, watch(alsoCalls));
        expect(alsoCalls).to.deep.equal(['live']);
        await state.publish(key('w'), 'm');
        await until(() => got.length === 1);
        await off();
        await alsoOff();
        await other.close();
        await sleep(50);
        expect(calls).to.deep.equal(['live']);
        expect(alsoCalls).to.deep.equal(['live']);
      });

      it('keeps delivering when a watcher throws', async function () {
        const got: string[] = [];
        const boom = () => {
          throw new Error('watcher bug');
        };
        await state.subscribe(key('ch'), (m) => got.push(m), { onLive: boom, onLost: boom });
        await state.publish(key('ch'), 'a');
        await until(() => got.length === 1);
      });

      it('delivers nothing to a handler unsubscribed right after the publish', async function () {
        const got: string[] = [];
        const kept: string[] = [];
        const off = await state.subscribe(key('ch'), (m) => got.push(m));
        await state.subscribe(key('ch'), (m) => kept.push(m));
        const published = state.publish(key('ch'), 'late');
        await off();
        await published;
        await until(() => kept.length === 1);
        await sleep(50);
        expect(got).to.deep.equal([]);
      });

      it('publishing to a channel nobody listens to is fine', async function () {
        await state.publish(key('nobody'), 'x');
      });
    });

    it('rejects calls after close, and close is idempotent', async function () {
      await state.close();
      await state.close();
      const err = await state.get(key('a')).catch((e: unknown) => e);
      expect(err).to.be.instanceOf(Error);
    });

    if (factory.rawKeys !== undefined) {
      const rawKeys = factory.rawKeys.bind(factory);
      it(`stores every key under the ${KEY_PREFIX} prefix`, async function () {
        await state.set(key('s'), 'v');
        await state.incr(key('c'), { ttlMs: 10_000 });
        await state.hashSet(key('h'), 'f', 'v');
        await state.hashSet(key('i'), 'f', 'v', { extendTtlMs: 10_000 });
        await state.set(key('t'), 'v');
        await state.take(key('t'));
        const mine = (await rawKeys()).filter((k) => k.includes(ns)).sort();
        expect(mine).to.deep.equal([key('c'), key('h'), key('i'), key('s')].map((k) => KEY_PREFIX + k));
      });
    }
  });
}

/** Polls until the condition holds, failing after two seconds. */
export async function until(condition: () => boolean, timeoutMs = 2_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await sleep(10);
  }
}
