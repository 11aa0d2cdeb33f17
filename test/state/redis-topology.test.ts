/** The Redis options (src/state/redis-topology.ts): credentials no topology reads, as validate sees them. */
import { expect } from 'chai';
import { parseRedisTopology, RedisConfigError, withoutUnusedCredentials } from '../../src/state/redis-topology.js';

describe('state/redis-topology', () => {
  it('leaves out, and names, the Sentinel credentials without sentinels and the node credentials without any Redis', () => {
    const alone = withoutUnusedCredentials({ sentinelPassword: 's', sentinelUsername: 'u', password: 'p', username: 'n' });
    expect(alone.unused).to.deep.equal(['SVC_REDIS_SENTINEL_USERNAME', 'SVC_REDIS_SENTINEL_PASSWORD', 'SVC_REDIS_USERNAME', 'SVC_REDIS_PASSWORD']);
    expect(parseRedisTopology(alone.input)).to.equal(undefined);
    // With a cluster the node password is used; the sentinels' is not.
    const cluster = withoutUnusedCredentials({ cluster: '127.0.0.1:7000', sentinelPassword: 's', password: 'p' });
    expect(cluster.unused).to.deep.equal(['SVC_REDIS_SENTINEL_PASSWORD']);
    expect(parseRedisTopology(cluster.input)).to.deep.equal({ kind: 'cluster', nodes: [{ host: '127.0.0.1', port: 7000 }], auth: { password: 'p', tls: false } });
  });

  it('leaves what a topology reads, and what is a mistake rather than unused, to the parser', () => {
    const sentinel = { sentinels: '127.0.0.1:26379', sentinelMaster: 'svc', sentinelPassword: 's' };
    expect(withoutUnusedCredentials(sentinel)).to.deep.equal({ input: sentinel, unused: [] });
    // A URL carries its own password: SVC_REDIS_PASSWORD beside it is refused, not ignored.
    const url = { redis: 'redis://127.0.0.1:6379', password: 'p' };
    expect(withoutUnusedCredentials(url).unused).to.deep.equal([]);
    expect(() => parseRedisTopology(withoutUnusedCredentials(url).input)).to.throw(RedisConfigError, /^SVC_REDIS_PASSWORD: only with --redis-sentinel or --redis-cluster/);
    // The master name is a flag someone typed: still refused without sentinels.
    expect(() => parseRedisTopology(withoutUnusedCredentials({ sentinelMaster: 'svc', sentinelPassword: 's' }).input)).to.throw(RedisConfigError, /^--redis-sentinel-master \(or SVC_REDIS_SENTINEL_MASTER\): only with --redis-sentinel/);
    // The server parses what it is given, unused credentials included: it refuses them.
    expect(() => parseRedisTopology({ sentinelPassword: 's' })).to.throw(RedisConfigError, 'SVC_REDIS_SENTINEL_PASSWORD: only with --redis-sentinel (or SVC_REDIS_SENTINELS)');
  });
});
