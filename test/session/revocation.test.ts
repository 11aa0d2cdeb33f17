/**
 * The revocation list each replica keeps in memory (src/session/revocation.ts): complete from
 * the start with the memory backend; with Redis (a real redis-server, started once for this
 * file) complete while subscribed and loaded, per-request look-ups otherwise. A small TCP
 * relay in front of Redis cuts one replica off while the other keeps writing.
 */
import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { connect, createServer, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import {
  COMPLETE_MESSAGE,
  createRevocation,
  LOST_MESSAGE,
  REVOKED_HASH,
  REVOKED_PREFIX,
  type Revocation,
} from '../../src/session/revocation.js';
import { createMemoryState } from '../../src/state/memory.js';
import { createRedisState } from '../../src/state/redis.js';
import { Unavailable } from '../../src/errors.js';
import { KEY_PREFIX, NotReplicated, type StateBackend } from '../../src/state/state.js';
import { startRedis, type RedisPeer } from '../helpers/peers.js';
import { clusterTopology, openReadyState, startRedisCluster, type RedisClusterPeer } from '../helpers/redis-topology.js';
import { until } from '../state/state-suite.js';

const silent = pino({ level: 'silent' });

/** A logger that keeps the messages, to count warnings and infos. */
function recordingLog() {
  const warns: string[] = [];
  const infos: string[] = [];
  const text = (a: unknown, b: unknown) => String(typeof a === 'string' ? a : b);
  return {
    warns,
    infos,
    log: {
      warn: (a: unknown, b?: unknown) => void warns.push(text(a, b)),
      info: (a: unknown, b?: unknown) => void infos.push(text(a, b)),
    } as unknown as typeof silent,
  };
}

/** Seconds since the epoch, `s` from now: a token's `exp`. */
const inSeconds = (s: number) => Math.floor(Date.now() / 1000) + s;

/** The backend, with its get() calls counted. */
function countingGets(state: StateBackend): StateBackend & { gets: number } {
  const counted = {
    ...state,
    gets: 0,
    get(key: string) {
      counted.gets++;
      return state.get(key);
    },
  };
  return counted;
}

describe('session: revocation list', function () {
  let closers: (() => Promise<void>)[] = [];
  afterEach(async function () {
    for (const close of closers.reverse()) await close();
    closers = [];
  });

  async function replica(state: StateBackend, options: { log?: typeof silent; now?: () => number; reloadIntervalMs?: number } = {}): Promise<Revocation> {
    const revocation = await createRevocation({ state, log: options.log ?? silent, now: options.now ?? Date.now, ...(options.reloadIntervalMs === undefined ? {} : { reloadIntervalMs: options.reloadIntervalMs }) });
    closers.push(() => revocation.close());
    return revocation;
  }

  describe('memory backend', function () {
    it('is complete from the start: revokedNow answers at once, and no look-up is made', async function () {
      const memory = createMemoryState({ log: silent });
      closers.push(() => memory.close());
      const state = countingGets(memory);
      const a = await replica(state);
      expect(a.revokedNow('never-revoked')).to.equal(false);
      await a.revoke('one', inSeconds(60));
      expect(a.revokedNow('one')).to.equal(true);

      // Another instance over the same backend: loaded at start, then told by pub/sub.
      const b = await replica(state);
      expect(b.revokedNow('one')).to.equal(true);
      expect(b.revokedNow('never-revoked')).to.equal(false);
      await a.revoke('two', undefined);
      await until(() => b.revokedNow('two') === true);
      expect(await b.isRevoked('two')).to.equal(true);
      expect(await b.isRevoked('never-revoked')).to.equal(false);
      expect(state.gets).to.equal(0);
    });

    it('tells its listeners of each id once: its own revocations and those of another replica', async function () {
      const memory = createMemoryState({ log: silent });
      closers.push(() => memory.close());
      const [a, b] = [await replica(memory), await replica(memory)];
      const heard: Record<'a' | 'b', string[]> = { a: [], b: [] };
      a.onRevoked((jti) => heard.a.push(jti));
      b.onRevoked((jti) => heard.b.push(jti));
      await a.revoke('one', inSeconds(60));
      await until(() => heard.b.length === 1);
      await a.revoke('one', inSeconds(60)); // again: nothing new
      await b.revoke('two', undefined);
      await until(() => heard.a.length === 2);
      expect(heard).to.deep.equal({ a: ['one', 'two'], b: ['one', 'two'] });
    });

    it('forgets a revocation when it expires, by the clock it was given, and prunes the list on load', async function () {
      let now = 1_700_000_000_000;
      const clock = () => now;
      const state = createMemoryState({ log: silent, now: clock });
      closers.push(() => state.close());
      const a = await replica(state, { now: clock });
      await a.revoke('short', now / 1000 + 10);
      await a.revoke('forever', undefined);
      expect(await state.hashGetAll(REVOKED_HASH)).to.deep.equal({ short: String(now + 10_000), forever: 'Infinity' });
      now += 10_000;
      expect(a.revokedNow('short')).to.equal(false);
      expect(a.revokedNow('forever')).to.equal(true);
      await replica(state, { now: clock });
      expect(await state.hashGetAll(REVOKED_HASH)).to.deep.equal({ forever: 'Infinity' });
    });
  });

  describe('two replicas on one real Redis', function () {
    let redis: RedisPeer;
    let raw: Redis;

    before(async function () {
      redis = await startRedis();
      raw = new Redis(redis.url, { maxRetriesPerRequest: 1, lazyConnect: true });
      await raw.connect();
    });

    after(async function () {
      raw?.disconnect();
      await redis?.stop();
    });

    beforeEach(async function () {
      await raw.flushall();
    });

    function redisState(url = redis.url): StateBackend {
      const state = createRedisState({ url, log: silent });
      closers.push(() => state.close());
      return state;
    }

    /** GETs Redis answered since the last RESETSTAT. */
    async function getCalls(): Promise<number> {
      const stats = await raw.info('commandstats');
      return Number(/^cmdstat_get:calls=(\d+)/m.exec(stats)?.[1] ?? 0);
    }

    it('a revocation on replica A is seen by B from memory (pub/sub), with no GET to Redis', async function () {
      const a = await replica(redisState());
      const b = await replica(redisState());
      const jti = randomUUID();
      const other = randomUUID();
      expect(b.revokedNow(other)).to.equal(false);
      await raw.config('RESETSTAT');
      await a.revoke(jti, inSeconds(60));
      await until(() => b.revokedNow(jti) === true);
      expect(await b.isRevoked(jti)).to.equal(true);
      expect(await b.isRevoked(other)).to.equal(false);
      expect(await a.isRevoked(jti)).to.equal(true);
      expect(await getCalls(), 'GETs answered by Redis').to.equal(0);

      // Stored both ways: the key (older replicas, fallback) and the hash (the whole list).
      const ttl = await raw.pttl(`${KEY_PREFIX}${REVOKED_PREFIX}${jti}`);
      expect(ttl).to.be.within(1, 60_000);
      expect(Number(await raw.hget(KEY_PREFIX + REVOKED_HASH, jti))).to.be.within(Date.now(), Date.now() + 60_000);
      const forever = randomUUID();
      await a.revoke(forever, undefined);
      expect(await raw.pttl(`${KEY_PREFIX}${REVOKED_PREFIX}${forever}`)).to.equal(-1);
      expect(await raw.hget(KEY_PREFIX + REVOKED_HASH, forever)).to.equal('Infinity');
      await until(() => b.revokedNow(forever) === true);
    });

    it('loads the list at start, so it is complete at once, and prunes expired entries from Redis', async function () {
      const [old, live, forever] = [randomUUID(), randomUUID(), randomUUID()];
      await raw.hset(KEY_PREFIX + REVOKED_HASH, old, String(Date.now() - 1_000), live, String(Date.now() + 60_000), forever, 'Infinity');
      const b = await replica(redisState());
      expect(b.revokedNow(old)).to.equal(false);
      expect(b.revokedNow(live)).to.equal(true);
      expect(b.revokedNow(forever)).to.equal(true);
      expect(Object.keys(await raw.hgetall(KEY_PREFIX + REVOKED_HASH)).sort()).to.deep.equal([live, forever].sort());
    });

    it('picks up a revocation whose PUBLISH was lost at the next periodic reload', async function () {
      const b = await replica(redisState(), { reloadIntervalMs: 100 });
      const jti = randomUUID();
      // As if a replica wrote the list and its PUBLISH then failed.
      await raw.hset(KEY_PREFIX + REVOKED_HASH, jti, String(Date.now() + 60_000));
      expect(b.revokedNow(jti)).to.equal(false);
      await until(() => b.revokedNow(jti) === true, 1_000);
    });

    it('while B is cut off from Redis it answers undefined; once back it has what A revoked meanwhile', async function () {
      this.timeout(15_000);
      const relay = await tcpRelay(redis.port);
      closers.push(() => relay.close());
      const recorded = recordingLog();
      const a = await replica(redisState());
      const b = await replica(redisState(relay.url), { log: recorded.log });
      const before = randomUUID();
      const during = randomUUID();
      const unknown = randomUUID();
      await a.revoke(before, inSeconds(60));
      await until(() => b.revokedNow(before) === true);
      expect(b.revokedNow(unknown)).to.equal(false);

      relay.refuse(true);
      relay.cut();
      await until(() => b.revokedNow(unknown) === undefined);
      expect(recorded.warns.filter((w) => w === LOST_MESSAGE)).to.have.length(1);
      await a.revoke(during, inSeconds(60)); // published while B cannot hear it
      await sleep(100);
      expect(b.revokedNow(during)).to.equal(undefined);
      expect(b.revokedNow(before)).to.equal(true); // known here: certain even now
      expect(await b.isRevoked(before)).to.equal(true);
      expect(await b.isRevoked(unknown)).to.equal(false); // the look-up fails: this replica's list

      relay.refuse(false);
      await until(() => b.revokedNow(during) === true, 5_000);
      expect(b.revokedNow(unknown)).to.equal(false);
      expect(recorded.warns.filter((w) => w === LOST_MESSAGE)).to.have.length(1);
      expect(recorded.infos.filter((i) => i === COMPLETE_MESSAGE)).to.have.length(1);
    });

    it('while only its subscription is down, B asks Redis per request (GET) and sees what an older replica wrote', async function () {
      this.timeout(15_000);
      const relay = await tcpRelay(redis.port);
      closers.push(() => relay.close());
      const b = await replica(redisState(relay.url));
      const jti = randomUUID();
      const unknown = randomUUID();
      expect(b.revokedNow(unknown)).to.equal(false);

      // New connections through the relay fail; B's command connection stays.
      relay.refuse(true);
      await raw.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
      await until(() => b.revokedNow(unknown) === undefined);
      // An older replica: the key alone, no list entry, no message B could hear.
      await raw.set(`${KEY_PREFIX}${REVOKED_PREFIX}${jti}`, '1', 'PX', 60_000);
      await raw.config('RESETSTAT');
      expect(await b.isRevoked(jti)).to.equal(true);
      expect(await b.isRevoked(unknown)).to.equal(false);
      expect(await getCalls(), 'GETs answered by Redis').to.equal(2);

      relay.refuse(false);
      await until(() => b.revokedNow(unknown) === false, 5_000);
      await raw.config('RESETSTAT');
      expect(await b.isRevoked(unknown)).to.equal(false);
      expect(await getCalls(), 'GETs answered by Redis').to.equal(0);
    });

    it('started while Redis is unreachable: per-request look-ups until it has subscribed and loaded, then from memory', async function () {
      this.timeout(15_000);
      const relay = await tcpRelay(redis.port);
      closers.push(() => relay.close());
      relay.refuse(true);
      const recorded = recordingLog();
      const b = await replica(redisState(relay.url), { log: recorded.log });
      const jti = randomUUID();
      expect(b.revokedNow(jti)).to.equal(undefined);
      expect(recorded.warns).to.have.length(1);
      expect(recorded.warns[0]).to.match(/cannot subscribe/);
      await raw.hset(KEY_PREFIX + REVOKED_HASH, jti, 'Infinity');

      relay.refuse(false);
      await until(() => b.revokedNow(jti) === true, 5_000);
      expect(b.revokedNow(randomUUID())).to.equal(false);
      expect(recorded.infos.filter((i) => i === COMPLETE_MESSAGE)).to.have.length(1);
    });

    // Stops the shared redis-server: keep this the last test of the file.
    it('Redis stopped: undefined, answers from the local list, one warning; complete again after the restart, one info', async function () {
      this.timeout(20_000);
      const recorded = recordingLog();
      const a = await replica(redisState());
      const b = await replica(redisState(), { log: recorded.log });
      const known = randomUUID();
      const unknown = randomUUID();
      await a.revoke(known, inSeconds(60));
      await until(() => b.revokedNow(known) === true);

      raw.disconnect();
      await redis.stop();
      await until(() => b.revokedNow(unknown) === undefined);
      expect(b.revokedNow(known)).to.equal(true);
      expect(await b.isRevoked(known)).to.equal(true);
      expect(await b.isRevoked(unknown)).to.equal(false);
      expect(await b.isRevoked(unknown)).to.equal(false);
      expect(recorded.warns.filter((w) => w === LOST_MESSAGE)).to.have.length(1);
      expect(recorded.infos).to.deep.equal([]);

      raw = new Redis(redis.url, { maxRetriesPerRequest: 1, lazyConnect: true });
      await redis.restart();
      await raw.connect();
      await until(() => b.revokedNow(unknown) === false, 5_000);
      // The restarted Redis is empty; what B knew stays revoked.
      expect(b.revokedNow(known)).to.equal(true);
      const after = randomUUID();
      const deadline = Date.now() + 5_000;
      for (;;) {
        try {
          await a.revoke(after, inSeconds(60));
          break;
        } catch (err: unknown) {
          if (Date.now() > deadline) throw err;
          await sleep(50);
        }
      }
      await until(() => b.revokedNow(after) === true);
      expect(recorded.warns.filter((w) => w === LOST_MESSAGE)).to.have.length(1);
      expect(recorded.infos.filter((i) => i === COMPLETE_MESSAGE)).to.have.length(1);
    });
  });

  /**
   * A logout answered with success must survive a failover, and a replica that starts later
   * trusts the hash alone (it loads it and answers from memory): so the hash's write waits for
   * a replica as the key's does. On a Cluster the two sit in different slots, on different
   * primaries; with the hash's primary left without its replica the logout must fail, or a
   * failover of that primary would forget it while the logout said it was done.
   */
  describe('on a real Redis Cluster', function () {
    this.timeout(60_000);
    let peer: RedisClusterPeer;
    before(async function () {
      peer = await startRedisCluster();
    });
    after(async function () {
      await peer?.stop();
    });

    it('fails a revocation while the revocation list\'s primary has no replica, though the key\'s has one', async function () {
      await peer.awaitReplicated();
      const r = new Redis({ host: '127.0.0.1', port: peer.nodes[0]?.port ?? 0, lazyConnect: true });
      await r.connect();
      try {
        const slotOf = async (key: string) => Number(await r.call('CLUSTER', 'KEYSLOT', `${KEY_PREFIX}${key}`));
        const owners = (await r.call('CLUSTER', 'SLOTS')) as [from: number, to: number, primary: [string, number]][];
        const ownerOf = (slot: number) => owners.find(([from, to]) => slot >= from && slot <= to);
        const list = ownerOf(await slotOf(REVOKED_HASH));
        if (list === undefined) throw new Error('no primary owns the revocation list\'s slot');
        let jti = randomUUID();
        while (ownerOf(await slotOf(`${REVOKED_PREFIX}${jti}`))?.[2][1] === list[2][1]) jti = randomUUID();

        const state = await openReadyState(clusterTopology(peer));
        closers.push(() => state.close());
        const revocation = await replica(state);
        // The primary's own word (CLUSTER SLOTS lists a replica only once gossip has spread it).
        const primary = new Redis({ host: '127.0.0.1', port: Number(list[2][1]), lazyConnect: true });
        await primary.connect();
        const replication = await primary.info('replication').finally(() => primary.disconnect());
        const replicaPort = Number(/^slave0:.*\bport=(\d+)/m.exec(replication)?.[1]);
        if (!(replicaPort > 0)) throw new Error(`the revocation list's primary has no replica to stop: ${replication}`);
        await peer.kill(replicaPort);
        try {
          const err = await revocation.revoke(jti, inSeconds(600)).then(() => undefined, (e: unknown) => e);
          expect(err, 'a logout whose list entry is on no replica').to.be.instanceOf(Unavailable);
          expect((err as Error).message).to.match(/no replica acknowledged the write/);
          expect((err as Error).cause, 'the backend said the write was not replicated').to.be.instanceOf(NotReplicated);
        } finally {
          await peer.start(replicaPort);
        }
        // Not a broken cluster: with the replica back, the same revocation is answered as done.
        // A replica just back may take longer than the write's wait to acknowledge on a loaded
        // host: only that refusal is tried again, for a while.
        await peer.awaitReplicated();
        const deadline = Date.now() + 20_000;
        for (;;) {
          const refused = await revocation.revoke(jti, inSeconds(600)).then(() => undefined, (e: unknown) => e);
          if (refused === undefined) break;
          if (!(refused instanceof Unavailable && refused.cause instanceof NotReplicated) || Date.now() > deadline) throw refused;
          await sleep(200);
        }
        expect(await r.call('CLUSTER', 'COUNTKEYSINSLOT', await slotOf(REVOKED_HASH))).to.be.above(0);
      } finally {
        r.disconnect();
      }
    });
  });
});

interface TcpRelay {
  readonly url: string;
  /** While on, new connections are closed as soon as they are accepted. */
  refuse(on: boolean): void;
  /** Closes every relayed connection. */
  cut(): void;
  close(): Promise<void>;
}

/** A loopback TCP relay to 127.0.0.1:port, to cut one client off a Redis that stays up. */
async function tcpRelay(port: number): Promise<TcpRelay> {
  const sockets = new Set<Socket>();
  let refusing = false;
  const server = createServer((client) => {
    if (refusing) {
      client.destroy();
      return;
    }
    const upstream = connect(port, '127.0.0.1');
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', end).on('close', end);
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const relayPort = typeof address === 'object' && address !== null ? address.port : 0;
  function cut() {
    for (const socket of [...sockets]) socket.destroy();
  }
  return {
    url: `redis://127.0.0.1:${relayPort}`,
    refuse(on) {
      refusing = on;
    },
    cut,
    close() {
      cut();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
