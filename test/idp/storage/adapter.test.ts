/**
 * The identity provider's storage adapter on each state backend: memory, and a real
 * redis-server this file starts on a free loopback port (a missing binary fails the run).
 */
import { expect } from 'chai';
import { pino } from 'pino';
import { createStateAdapterClass } from '../../../src/idp/storage/adapter.js';
import { createMemoryState } from '../../../src/state/memory.js';
import { createRedisState } from '../../../src/state/redis.js';
import { StateUnavailable, type StateBackend } from '../../../src/state/state.js';
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

  describe('with the state backend unreachable', function () {
    /** Every call of the backend fails as Redis does while it fails over. */
    const unreachable = new Proxy(createMemoryState({ log }), {
      get(target, name, receiver) {
        const value: unknown = Reflect.get(target, name, receiver);
        if (typeof value !== 'function' || name === 'close') return value;
        return () => Promise.reject(new StateUnavailable('Redis is failing over'));
      },
    });
    const Adapter = createStateAdapterClass(unreachable, { serverSecretKey: 'adapter-unreachable-secret-0123456789' });
    const calls: Record<string, (a: InstanceType<typeof Adapter>) => Promise<unknown>> = {
      upsert: (a) => a.upsert('id-1', { kind: 'Interaction' }, 60),
      find: (a) => a.find('id-1'),
      findByUid: (a) => a.findByUid('uid-1'),
      consume: (a) => a.consume('id-1'),
      destroy: (a) => a.destroy('id-1'),
      revokeByGrantId: (a) => a.revokeByGrantId('grant-1'),
    };
    for (const [name, call] of Object.entries(calls)) {
      it(`answers ${name} with 503 temporarily_unavailable, which a client may retry, not a server error`, async function () {
        const model = name === 'consume' ? 'AuthorizationCode' : name === 'revokeByGrantId' ? 'RefreshToken' : 'Interaction';
        const err = (await call(new Adapter(model)).then(() => undefined, (e: unknown) => e)) as { statusCode?: number; message?: string; expose?: boolean; cause?: unknown } | undefined;
        expect(err?.statusCode).to.equal(503);
        expect(err?.message).to.equal('temporarily_unavailable');
        expect(err?.expose).to.equal(true);
        expect(err?.cause).to.be.instanceOf(StateUnavailable);
      });
    }
  });
});
