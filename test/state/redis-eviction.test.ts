/**
 * svc warns when Redis may evict its keys (an evicted revocation brings a logged-out token
 * back), and says so when Redis will not tell (CONFIG refused): a real redis-server.
 */
import { expect } from 'chai';
import { Redis } from 'ioredis';
import { createRedisState, type RedisState } from '../../src/state/redis.js';
import { checkEvictionPolicy } from '../../src/state/redis-eviction.js';
import { startRedis, type RedisPeer } from '../helpers/peers.js';

interface Line {
  readonly obj: unknown;
  readonly msg: string;
}

function recorder(): { log: { info: () => void; warn: (obj: unknown, msg?: string) => void }; warnings: Line[] } {
  const warnings: Line[] = [];
  return { log: { info: () => undefined, warn: (obj, msg) => void warnings.push({ obj, msg: msg ?? '' }) }, warnings };
}

describe('state/redis-eviction', function () {
  this.timeout(30_000);
  let redis: RedisPeer;
  let raw: Redis;
  before(async () => {
    redis = await startRedis();
    raw = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    await raw.call('ACL', 'SETUSER', 'noconfig', 'on', '>noconfig-pass', '~*', '&*', '+@all', '-config');
  });
  after(async () => {
    raw?.disconnect();
    await redis?.stop();
  });

  async function warningsOfAStart(url: string): Promise<Line[]> {
    const { log, warnings } = recorder();
    const state: RedisState = createRedisState({ url, log });
    try {
      for (let i = 0; i < 50 && warnings.every((w) => !w.msg.includes('maxmemory-policy')); i++) await new Promise((r) => setTimeout(r, 40));
      return warnings.filter((w) => w.msg.includes('maxmemory-policy'));
    } finally {
      await state.close();
    }
  }

  it('says nothing when Redis runs with noeviction', async () => {
    await raw.config('SET', 'maxmemory-policy', 'noeviction');
    const { log, warnings } = recorder();
    await checkEvictionPolicy(raw, 'here', log);
    expect(warnings).to.deep.equal([]);
  });

  it('warns once at start when Redis may evict, naming the policy and the one to set', async () => {
    await raw.config('SET', 'maxmemory-policy', 'allkeys-lru');
    try {
      const where = `127.0.0.1:${String(redis.port)}`;
      const lines = await warningsOfAStart(redis.url);
      expect(lines.map((l) => l.msg)).to.deep.equal([
        `state: redis at ${where} runs with maxmemory-policy 'allkeys-lru', which can evict svc's keys: an evicted revocation brings back a logged-out token until the loss is found, an evicted marker logs everyone out; set maxmemory-policy noeviction`,
      ]);
    } finally {
      await raw.config('SET', 'maxmemory-policy', 'noeviction');
    }
  });

  it('says that it could not check when CONFIG is refused', async () => {
    const url = redis.url.replace('redis://', 'redis://noconfig:noconfig-pass@');
    const lines = await warningsOfAStart(url);
    expect(lines).to.have.length(1);
    expect(lines[0]?.msg).to.match(/^state: could not read maxmemory-policy of redis at 127\.0\.0\.1:\d+ \(CONFIG GET refused or failed\); make sure it is 'noeviction': an evicted key can bring back a logged-out token or log everyone out$/);
    expect(JSON.stringify(lines[0]?.obj)).to.include('NOPERM');
  });
});
