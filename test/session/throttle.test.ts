/** The shared throttle suite on the memory backend and on a real Redis (started once here). */
import { createMemoryState } from '../../src/state/memory.js';
import { createRedisState } from '../../src/state/redis.js';
import type { StateBackend } from '../../src/state/state.js';
import { startRedis, type RedisPeer } from '../helpers/peers.js';
import { throttleSuite } from './throttle-suite.js';

const quiet = { info: () => undefined, warn: () => undefined };

describe('login throttle backends', function () {
  let memory: StateBackend;
  let redis: StateBackend;
  let peer: RedisPeer;

  before(async function () {
    this.timeout(30_000);
    memory = createMemoryState();
    peer = await startRedis();
    redis = createRedisState({ url: peer.url, log: quiet });
    await redis.ping();
  });
  after(async function () {
    await memory.close();
    await redis?.close();
    await peer?.stop();
  });

  throttleSuite('memory', () => memory);
  throttleSuite('redis', () => redis);
});
