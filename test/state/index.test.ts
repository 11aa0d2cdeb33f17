import { expect } from 'chai';
import { pino } from 'pino';
import { Redis } from 'ioredis';
import { openState, StateStartError, StateUnavailable } from '../../src/state/index.js';
import { freePort, startRedis, type RedisPeer } from '../helpers/peers.js';

const log = pino({ level: 'silent' });

describe('state: openState', function () {
  let redis: RedisPeer;
  before(async function () {
    redis = await startRedis();
  });
  after(async function () {
    await redis?.stop();
  });

  it('uses memory without a Redis URL (empty counts as none)', async function () {
    for (const redisUrl of [undefined, '']) {
      const state = await openState({ redisUrl, log });
      expect(state.kind).to.equal('memory');
      await state.close();
    }
  });

  it('uses Redis when given its URL', async function () {
    const state = await openState({ redisUrl: redis.url, log });
    expect(state.kind).to.equal('redis');
    await state.set('open-state', 'yes');
    expect(await state.get('open-state')).to.equal('yes');
    await state.close();
  });

  it('still starts when Redis is unreachable, and calls fail with StateUnavailable', async function () {
    const state = await openState({ redisUrl: `redis://127.0.0.1:${await freePort()}`, log, startupWaitMs: 300 });
    expect(state.kind).to.equal('redis');
    const err = await state.get('k').catch((e: unknown) => e);
    expect(err).to.be.instanceOf(StateUnavailable);
    await state.close();
  });

  it('stops with StateStartError on a refused password, naming the URL\'s credentials and never the password', async function () {
    const guarded = await startRedis();
    try {
      const raw = new Redis(guarded.url);
      await raw.config('SET', 'requirepass', 'right-pw');
      raw.disconnect();
      for (const url of [`redis://:wrong-pw@127.0.0.1:${guarded.port}`, guarded.url]) {
        const started = Date.now();
        const err = await openState({ redisUrl: url, log, startupWaitMs: 300 }).then((s) => s.close(), (e: unknown) => e);
        expect(err, url).to.be.instanceOf(StateStartError);
        expect((err as Error).message).to.equal(`state: standalone redis at 127.0.0.1:${guarded.port} cannot be used: Redis refused the user or password of the --redis URL (SVC_REDIS_URL)`);
        expect(Date.now() - started, 'within the start-up wait and one check').to.be.below(3_000);
      }
    } finally {
      await guarded.stop();
    }
  });
});
