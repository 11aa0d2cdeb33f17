/**
 * The identity provider's storage adapter on each state backend: memory, and a real
 * redis-server this file starts on a free loopback port (a missing binary fails the run).
 */
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { createMemoryState } from '../../../src/state/memory.js';
import { createRedisState } from '../../../src/state/redis.js';
import type { StateBackend } from '../../../src/state/state.js';
import { startRedis, type RedisPeer } from '../../helpers/peers.js';
import { runAdapterSuite } from './adapter-suite.js';

const log = pino({ level: 'silent' });

describe('idp: adapter', function () {
  describe('on memory', function () {
    let store: StateBackend;
    beforeEach(function () {
      store = createMemoryState({ log });
    });
    // One store per test: both "replicas" of a test are the same in-process backend.
    runAdapterSuite('memory', { open: async () => store });
  });

  describe('on redis', function () {
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
    runAdapterSuite('redis', {
      open: async () => createRedisState({ url: redis.url, log }),
      async rawEntries() {
        const keys = await raw.keys('*');
        return Promise.all(keys.map(async (key) => {
          const type = await raw.type(key);
          const value = type === 'hash' ? JSON.stringify(await raw.hgetall(key)) : type === 'string' ? await raw.get(key) : `(${type})`;
          return [key, value ?? ''] as const;
        }));
      },
    });
  });
});
