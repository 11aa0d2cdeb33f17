/**
 * The identity provider's storage adapter on each state backend: memory, and a real
 * redis-server this file starts on a free loopback port (a missing binary fails the run).
 */
import { pino } from 'pino';
import { createMemoryState } from '../../../src/state/memory.js';
import { createRedisState } from '../../../src/state/redis.js';
import type { StateBackend } from '../../../src/state/state.js';
import { startInspectedRedis, type InspectedRedis } from '../../helpers/redis-raw.js';
import { runAdapterPendingSuite } from './adapter-pending-suite.js';
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
    runAdapterPendingSuite('memory', async () => store);
  });

  describe('on redis', function () {
    let redis: InspectedRedis;
    before(async function () {
      redis = await startInspectedRedis();
    });
    after(async function () {
      await redis?.stop();
    });
    runAdapterSuite('redis', {
      open: async () => createRedisState({ url: redis.url, log }),
      rawEntries: () => redis.rawEntries(),
    });
    runAdapterPendingSuite('redis', async () => createRedisState({ url: redis.url, log }));
  });
});
