/** The session registry (src/session/registry.ts) against memory and a real redis-server. */
import { pino } from 'pino';
import { createMemoryState } from '../../src/state/memory.js';
import { createRedisState } from '../../src/state/redis.js';
import type { StateBackend } from '../../src/state/state.js';
import { startRedis, type RedisPeer } from '../helpers/peers.js';
import { runRegistrySuite } from './registry-suite.js';

const log = pino({ level: 'silent' });

describe('session registry', function () {
  describe('on memory', function () {
    let shared: StateBackend;
    beforeEach(function () {
      shared = createMemoryState({ log });
    });
    afterEach(() => shared.close());
    // Both "replicas" of a test share the one in-process backend.
    runRegistrySuite('memory', { open: async () => ({ ...shared, close: async () => undefined }) });
  });

  describe('on Redis', function () {
    let redis: RedisPeer;
    before(async function () {
      this.timeout(20_000);
      redis = await startRedis();
    });
    after(async function () {
      await redis?.stop();
    });
    runRegistrySuite('redis', { open: async () => createRedisState({ url: redis.url, log }) });
  });
});
