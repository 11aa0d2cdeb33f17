/**
 * The Redis backend against a real redis-server that this file starts on a free loopback
 * port (scripts/peers/start-redis.sh); a missing redis-server fails the run with the
 * package to install. Also: the raw layout (svc: prefix) and the fail-fast outage contract.
 */
import { expect } from 'chai';
import { readFile } from 'node:fs/promises';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { Redis, ReplyError } from 'ioredis';
import { pino } from 'pino';
import { createRedisState, translate } from '../../src/state/redis.js';
import { StateUnavailable, type StateBackend } from '../../src/state/state.js';
import { freePort, startRedis, type RedisPeer } from '../helpers/peers.js';
import { runBudgetSuite } from './budget-suite.js';
import { runTokenBucketSuite } from './token-bucket-suite.js';
import { runStateSuite, until } from './state-suite.js';

const log = pino({ level: 'silent' });

describe('state: redis', function () {
  let redis: RedisPeer;
  let raw: Redis;

  before(async function () {
    redis = await startRedis();
    raw = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  });

  after(async function () {
    raw?.disconnect();
    await redis?.stop();
  });

  runStateSuite('redis', {
    open: async () => createRedisState({ url: redis.url, log }),
    rawKeys: () => raw.keys('*'),
  });
  runBudgetSuite('redis', async () => createRedisState({ url: redis.url, log }));
  runTokenBucketSuite('redis', async () => createRedisState({ url: redis.url, log }));

  describe('redis specifics', function () {
    let state: StateBackend;
    beforeEach(function () {
      state = createRedisState({ url: redis.url, log });
    });
    afterEach(async function () {
      await state.close();
    });

    it('publishes on the svc:-prefixed channel', async function () {
      const sub = raw.duplicate();
      const got: string[] = [];
      sub.on('message', (channel: string, message: string) => got.push(`${channel} ${message}`));
      await sub.subscribe('svc:invalidate');
      await state.publish('invalidate', 'rbac');
      await until(() => got.length === 1);
      expect(got).to.deep.equal(['svc:invalidate rbac']);
      sub.disconnect();
    });

    it('fails fast with StateUnavailable when nothing listens on the port', async function () {
      const nowhere = createRedisState({ url: `redis://127.0.0.1:${await freePort()}`, log });
      try {
        const started = Date.now();
        const err = await nowhere.get('k').catch((e: unknown) => e);
        expect(err).to.be.instanceOf(StateUnavailable);
        expect(Date.now() - started).to.be.below(1_000);
        const pingErr = await nowhere.ping().catch((e: unknown) => e);
        expect(pingErr).to.be.instanceOf(StateUnavailable);
        const subErr = await nowhere.subscribe('ch', () => {}).catch((e: unknown) => e);
        expect(subErr).to.be.instanceOf(StateUnavailable);
      } finally {
        await nowhere.close();
      }
    });

    it('never puts a password from the URL in an error', async function () {
      const url = `redis://user:hunter2-secret@127.0.0.1:${await freePort()}/0`;
      const nowhere = createRedisState({ url, log });
      const err = await nowhere.get('k').catch((e: unknown) => e);
      await nowhere.close();
      expect(err).to.be.instanceOf(StateUnavailable);
      expect((err as Error).message).not.to.include('hunter2');
    });

    it('times out a call to a Redis that accepts but never answers (SIGSTOP)', async function () {
      await state.ping();
      const pid = Number((await readFile(redis.pidFile ?? '', 'utf8')).trim());
      process.kill(pid, 'SIGSTOP');
      try {
        const started = Date.now();
        const err = await state.get('k').catch((e: unknown) => e);
        expect(err).to.be.instanceOf(StateUnavailable);
        expect((err as Error).message).to.match(/timed out/i);
        expect(Date.now() - started, 'ms to fail').to.be.below(1_000);
      } finally {
        process.kill(pid, 'SIGCONT');
      }
      await eventually(() => state.ping(), 5_000);
    });

    it('tells a watcher at once when the subscriber connection is lost, and when it is subscribed again', async function () {
      this.timeout(15_000);
      const calls: string[] = [];
      /** Receivers of a PUBLISH sent by another client the moment onLive was called. */
      const receiversAtLive: Promise<number>[] = [];
      const got: string[] = [];
      await state.subscribe('watched', (m) => got.push(m), {
        onLive() {
          calls.push('live');
          receiversAtLive.push(raw.publish('svc:watched', `at live ${calls.length}`).catch(() => -1));
        },
        onLost: () => calls.push('lost'),
      });
      expect(calls).to.deep.equal(['live']);

      // A killed subscriber connection reconnects at once: lost, then live again.
      await raw.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
      await until(() => calls.length === 3, 5_000);
      expect(calls).to.deep.equal(['live', 'lost', 'live']);

      raw.disconnect();
      await redis.stop();
      await until(() => calls.length === 4, 5_000);
      expect(calls.at(-1)).to.equal('lost');
      // Joining a channel that is already subscribed while the connection is down: not live yet.
      const lateCalls: string[] = [];
      await state.subscribe('watched', () => undefined, { onLive: () => lateCalls.push('live'), onLost: () => lateCalls.push('lost') });
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(lateCalls).to.deep.equal([]);
      expect(calls).to.have.length(4);

      raw = new Redis(redis.url, { maxRetriesPerRequest: 1, lazyConnect: true });
      raw.on('error', () => undefined); // the next test stops Redis under it
      await redis.restart();
      // The subscriber may be live again before restart() returns: its onLive PUBLISH then
      // started this lazy client's connection already, and connect() would reject.
      if (raw.status === 'wait') await raw.connect();
      await until(() => calls.length === 5 && lateCalls.length === 1, 5_000);
      expect(calls).to.deep.equal(['live', 'lost', 'live', 'lost', 'live']);
      expect(lateCalls).to.deep.equal(['live']);
      // When onLive ran, the channel was subscribed again: a message published then arrives.
      expect(await Promise.all(receiversAtLive)).to.deep.equal([1, 1, 1]);
      await until(() => got.includes('at live 5'));
    });

    it('subscribes again after a reconnect whose first SUBSCRIBE was lost, and never rejects unhandled', async function () {
      this.timeout(15_000);
      // A relay in front of Redis that drops the subscriber's connection when it sends its first
      // SUBSCRIBE after a reconnect: before the fix ioredis then forgot the channel for good, and
      // its own resubscribe promise rejected with nobody to catch it.
      const unhandled: unknown[] = [];
      const onUnhandled = (reason: unknown) => unhandled.push(reason);
      process.on('unhandledRejection', onUnhandled);
      const subscriberSockets: Socket[] = [];
      let subscriberConnections = 0;
      const relay = createServer((client) => {
        const upstream = connect(Number(new URL(redis.url).port), '127.0.0.1');
        let number = 0;
        client.on('data', (data: Buffer) => {
          const text = data.toString('latin1');
          if (number === 0 && text.includes('svc-subscriber')) {
            number = ++subscriberConnections;
            subscriberSockets.push(client);
          }
          if (number === 2 && /\$9\r\nsubscribe\r\n/i.test(text)) { // the command, not the connection name
            client.destroy();
            return;
          }
          upstream.write(data);
        });
        upstream.on('data', (data: Buffer) => client.write(data));
        for (const [a, b] of [[client, upstream], [upstream, client]] as const) {
          a.on('error', () => b.destroy());
          a.on('close', () => b.destroy());
        }
      });
      await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
      const viaRelay = createRedisState({ url: `redis://127.0.0.1:${(relay.address() as AddressInfo).port}`, log });
      try {
        const calls: string[] = [];
        const got: string[] = [];
        await viaRelay.subscribe('relayed', (m) => got.push(m), { onLive: () => calls.push('live'), onLost: () => calls.push('lost') });
        subscriberSockets[0]?.destroy();
        await until(() => subscriberConnections >= 3 && calls.at(-1) === 'live', 10_000);
        expect(await raw.publish('svc:relayed', 'after the lost SUBSCRIBE')).to.equal(1);
        await until(() => got.includes('after the lost SUBSCRIBE'), 5_000);
        expect(unhandled).to.deep.equal([]);
      } finally {
        process.off('unhandledRejection', onUnhandled);
        await viaRelay.close();
        await new Promise((resolve) => relay.close(resolve));
      }
    });

    // Stops the shared redis-server: keep this the last test of the file.
    it('rejects within 1 s while Redis is down, and recovers (subscriptions too) after it restarts', async function () {
      this.timeout(15_000);
      const other = createRedisState({ url: redis.url, log });
      const got: string[] = [];
      await other.subscribe('outage', (m) => got.push(m));
      await state.set('outage:k', 'before');

      await redis.stop();
      for (const call of [() => state.get('outage:k'), () => state.incr('outage:c', { ttlMs: 1_000 }),
        () => state.publish('outage', 'lost'), () => state.ping()]) {
        const started = Date.now();
        const err = await call().catch((e: unknown) => e);
        expect(err).to.be.instanceOf(StateUnavailable);
        expect(Date.now() - started, 'ms to fail').to.be.below(1_000);
      }

      await redis.restart();
      await eventually(() => state.ping(), 5_000);
      expect(await state.get('outage:k')).to.equal(null); // a fresh, empty Redis
      await state.set('outage:k', 'after');
      expect(await state.get('outage:k')).to.equal('after');
      await eventually(async () => {
        await state.publish('outage', 'back');
        await until(() => got.includes('back'), 200);
      }, 5_000);
      await other.close();
    });
  });
});

/** Retries the call until it resolves, failing with its last error after timeoutMs. */
async function eventually(call: () => Promise<unknown>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await call();
      return;
    } catch (err: unknown) {
      if (Date.now() > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

describe('state: redis replies', function () {
  const reply = (message: string): Error => new (ReplyError as new (message: string) => Error)(message);

  it('makes a redirection ioredis did not follow (a slot changing hands) an outage, so callers fall back', function () {
    for (const message of ['MOVED 8511 127.0.0.1:20275', 'ASK 8511 127.0.0.1:20275']) {
      const translated = translate(reply(message), 'get', 'redis cluster');
      expect(translated, message).to.be.instanceOf(StateUnavailable);
      expect(translated.message).to.equal(`redis get failed at redis cluster: ${message}`);
    }
  });

  it('keeps a reply that means a mistake as it is', function () {
    const wrongType = reply('WRONGTYPE Operation against a key holding the wrong kind of value');
    expect(translate(wrongType, 'get', 'redis cluster')).to.equal(wrongType);
  });
});
