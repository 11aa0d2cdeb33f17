/**
 * The shared suites of the state's users, the login throttle's and the identity provider's
 * adapter's (with its bound on pending logins), on Redis Sentinel and on Redis Cluster (real redis-servers, each topology started
 * once here). The state contract itself runs on both in redis-topologies.test.ts; on memory and
 * one Redis, the suites run in their own files.
 */
import { Redis } from 'ioredis';
import type { StateBackend } from '../../src/state/state.js';
import { runAdapterPendingSuite } from '../idp/storage/adapter-pending-suite.js';
import { runAdapterSuite } from '../idp/storage/adapter-suite.js';
import { throttleSuite } from '../session/throttle-suite.js';
import {
  clusterTopology,
  openReadyState,
  sentinelTopology,
  startRedisCluster,
  startRedisSentinel,
  type RedisClusterPeer,
  type RedisSentinelPeer,
} from '../helpers/redis-topology.js';

/** Every raw key with its value (a hash's fields and values as JSON) on the given primaries. */
async function entriesOn(ports: readonly number[]): Promise<(readonly [string, string])[]> {
  const all = await Promise.all(ports.map(async (port) => {
    const r = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 1 });
    try {
      const keys = await r.keys('*');
      return await Promise.all(keys.map(async (key) => {
        const type = await r.type(key);
        const value = type === 'hash' ? JSON.stringify(await r.hgetall(key)) : type === 'string' ? await r.get(key) : `(${type})`;
        return [key, value ?? ''] as const;
      }));
    } finally {
      r.disconnect();
    }
  }));
  return all.flat();
}

/**
 * Both topologies are started together, at the first suite's start (each start is 2-3 s, mostly
 * waiting on the nodes); each suite stops its own, and the file's last hook whatever a filtered
 * run started and left.
 */
let sentinelStart: Promise<RedisSentinelPeer> | undefined;
let clusterStart: Promise<RedisClusterPeer> | undefined;
function startTopologies(): void {
  sentinelStart ??= startRedisSentinel();
  clusterStart ??= startRedisCluster();
  // A start that fails is reported by the suite that awaits it, not as an unhandled rejection.
  for (const started of [sentinelStart, clusterStart]) started.catch(() => undefined);
}
after(async function stopTopologies() {
  await Promise.all([sentinelStart, clusterStart].map((started) => started?.then((peer) => peer.stop(), () => undefined)));
});

describe('shared suites on redis sentinel', function () {
  let peer: RedisSentinelPeer;
  let shared: StateBackend;
  before(async function () {
    this.timeout(30_000);
    startTopologies();
    peer = await (sentinelStart as Promise<RedisSentinelPeer>);
    shared = await openReadyState(sentinelTopology(peer));
  });
  after(async function () {
    await shared?.close();
    await peer?.stop();
  });

  throttleSuite('redis sentinel', () => shared);
  runAdapterSuite('redis sentinel', {
    open: () => openReadyState(sentinelTopology(peer)),
    rawEntries: async () => entriesOn([await peer.primaryPort()]),
  });
  runAdapterPendingSuite('redis sentinel', () => openReadyState(sentinelTopology(peer)));
});

describe('shared suites on redis cluster', function () {
  let peer: RedisClusterPeer;
  let shared: StateBackend;
  before(async function () {
    this.timeout(30_000);
    startTopologies();
    peer = await (clusterStart as Promise<RedisClusterPeer>);
    shared = await openReadyState(clusterTopology(peer));
  });
  after(async function () {
    await shared?.close();
    await peer?.stop();
  });

  throttleSuite('redis cluster', () => shared);
  runAdapterSuite('redis cluster', {
    open: () => openReadyState(clusterTopology(peer)),
    rawEntries: async () => entriesOn(await peer.primaryPorts()),
  });
  runAdapterPendingSuite('redis cluster', () => openReadyState(clusterTopology(peer)));
});
