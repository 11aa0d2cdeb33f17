/**
 * A Redis client that ioredis gave up on ('end') is brought back by svc: the way a Sentinel
 * failover ends it, on real redis-servers and sentinels (scripts/peers/start-redis-sentinel.sh).
 *
 * How ioredis 6 ends a Sentinel client for good: a reconnect asks the sentinels where the
 * primary is; if, while that question is under way, the failover detector (a +switch-master
 * from a sentinel) or a READONLY reply disconnects the client "to reconnect", the connector's
 * `connecting` flag is cleared, the answer is thrown away as "Connection is closed." and the
 * client's status becomes 'end': no retry ever follows. Here the question is held open by
 * stopping (SIGSTOP) the sentinel the client asks first, and a SENTINEL FAILOVER through
 * another sentinel sends the +switch-master meanwhile, as a failover during a reconnect does.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import type { RedisState } from '../../src/state/redis.js';
import { ask, openReadyState, sentinelTopology, startRedisSentinel, type HostPort, type RedisSentinelPeer } from '../helpers/redis-topology.js';

/** The ids of the connections named `name` on the node at `port`. */
async function connectionsNamed(port: number, name: string): Promise<string[]> {
  return ask(port, undefined, async (r) => {
    const list = String(await r.call('CLIENT', 'LIST'));
    return list.split('\n').flatMap((line) => {
      const found = /^id=(\d+) .* name=(\S*)/.exec(line);
      return found?.[2] === name ? [found[1] as string] : [];
    });
  });
}

/** Kills every connection named `name` on the node at `port` (the client then reconnects). */
async function killConnections(port: number, name: string): Promise<void> {
  for (const id of await connectionsNamed(port, name)) await ask(port, undefined, (r) => r.call('CLIENT', 'KILL', 'ID', id));
}


/** SENTINEL FAILOVER through the sentinel at `port`, again while it has not yet seen the replica as a candidate (NOGOODSLAVE). */
async function failoverThrough(port: number, masterName: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const err = await ask(port, undefined, (r) => r.call('SENTINEL', 'FAILOVER', masterName)).then(() => undefined, (e: unknown) => e as Error);
    if (err === undefined) return;
    if (!/NOGOODSLAVE|INPROG/.test(err.message) || Date.now() > deadline) throw err;
    await sleep(200);
  }
}

/** Waits until the sentinel at `port` names a primary other than `old` (it has published +switch-master). */
async function namedPrimaryOtherThan(port: number, masterName: string, old: number): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const named = await ask(port, undefined, (r) => r.call('SENTINEL', 'get-master-addr-by-name', masterName) as Promise<[string, string] | null>);
    if (named !== null && Number(named[1]) !== old) return;
    await sleep(50);
  }
  throw new Error(`the sentinel at ${port} did not name a new primary within 20 s`);
}

function sentinelPid(peer: RedisSentinelPeer, port: number): number {
  return Number(readFileSync(join(peer.dir, `${port}.pid`), 'utf8').trim());
}

/** Milliseconds until ping() answers again, trying every 50 ms; throws after `timeoutMs`. */
async function msUntilPing(state: RedisState, timeoutMs: number): Promise<number> {
  const started = Date.now();
  let last: unknown;
  while (Date.now() - started < timeoutMs) {
    try {
      await state.ping();
      return Date.now() - started;
    } catch (err: unknown) {
      last = err;
      await sleep(50);
    }
  }
  throw new Error(`ping did not answer within ${timeoutMs} ms: ${last instanceof Error ? last.message : String(last)}`);
}

describe('state: a redis client that ioredis ended', function () {
  this.timeout(60_000);
  let peer: RedisSentinelPeer;
  let state: RedisState | undefined;

  before(async function () {
    peer = await startRedisSentinel();
  });

  afterEach(async function () {
    await state?.close();
    state = undefined;
  });

  after(async function () {
    await peer?.stop();
  });

  it('is reconnected by itself when a failover ends it during a reconnect (Sentinel)', async function () {
    state = await openReadyState(sentinelTopology(peer));
    const [first, second] = peer.sentinels as readonly [HostPort, HostPort];
    const stopped = sentinelPid(peer, first.port);
    const primary = await peer.primaryPort();
    process.kill(stopped, 'SIGSTOP');
    try {
      // The reconnect asks the stopped sentinel first and waits for its answer.
      await killConnections(primary, 'svc');
      await sleep(300);
      expect(await state.ping().then(() => 'answered', () => 'refused'), 'ping while the sentinel is stopped').to.equal('refused');
      // +switch-master from the other sentinels reaches the failover detector meanwhile.
      await failoverThrough(second.port, peer.masterName);
      // Sentinel publishes +switch-master once the promoted replica reports itself primary.
      await namedPrimaryOtherThan(second.port, peer.masterName, primary);
      await sleep(300);
      expect(state.connection(), 'the connection while the sentinel is stopped').to.deep.equal({ connected: false, revived: 0 });
    } finally {
      process.kill(stopped, 'SIGCONT');
    }
    const ms = await msUntilPing(state, 10_000);
    console.log(`      ping answered again ${ms} ms after the stopped sentinel resumed`);
    expect(state.connection(), 'the connection once it answers again').to.deep.equal({ connected: true, revived: 1 });
  });

  it('stays closed once svc closed it (its own end is not revived)', async function () {
    const opened = await openReadyState(sentinelTopology(peer));
    const primary = await peer.primaryPort();
    expect(await connectionsNamed(primary, 'svc'), 'while open').to.have.length(1);
    await opened.close();
    await sleep(1_000);
    expect(await connectionsNamed(primary, 'svc'), 'a second after close').to.deep.equal([]);
  });
});
