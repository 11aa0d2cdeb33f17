/**
 * Redis Sentinel (one primary, one replica, three sentinels) and Redis Cluster (three
 * primaries, three replicas) on free loopback ports, started by
 * scripts/peers/start-redis-sentinel.sh and start-redis-cluster.sh (shared with the
 * benchmarks). A node can be killed (SIGKILL, kept down) and started again (empty) through
 * scripts/peers/redis-node.sh; stop() stops every node and removes the dir.
 */
import { execFile } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { createRedisState, type RedisState } from '../../src/state/redis.js';
import type { RedisTopology } from '../../src/state/redis-topology.js';
import { freePort, startPeer, type Peer } from './peers.js';

const NODE_SCRIPT = fileURLToPath(new URL('../../scripts/peers/redis-node.sh', import.meta.url));

export interface HostPort {
  readonly host: string;
  readonly port: number;
}

interface Nodes {
  /** Every redis-server data node's port (not the sentinels). */
  readonly nodePorts: readonly number[];
  readonly dir: string;
  /** SIGKILL one node; it stays down until start(port). */
  kill(port: number): Promise<void>;
  /** Lets a killed node start again (empty; it rejoins as a replica) and waits for its PING. */
  start(port: number): Promise<void>;
  stop(): Promise<void>;
  /**
   * Waits until a replica of every primary acknowledges a write (WAIT 1), so that writes which
   * wait for a replica succeed again: a node started again answers PING long before its full
   * resynchronisation is over, and is online some time before its first acknowledgement.
   */
  awaitReplicated(timeoutMs?: number): Promise<void>;
}

export interface RedisSentinelPeer extends Nodes {
  readonly masterName: string;
  readonly sentinels: readonly HostPort[];
  /** The primary's port as the sentinels report it now. */
  primaryPort(): Promise<number>;
  /** SENTINEL FAILOVER, then waits until the sentinels name another primary and it says so itself. */
  failover(): Promise<number>;
  /** Waits until the sentinels name a primary other than `old` that answers as primary. */
  awaitPrimaryOtherThan(old: number, timeoutMs?: number): Promise<number>;
  /**
   * REPLICAOF: makes the node at `port` a replica of `primary`. After SENTINEL FAILOVER the old
   * primary stays a primary (without a replica, so writes that wait for one fail) until Sentinel
   * converts it, 8 to 18 s later: four publish periods of 2 s after its role was first reported,
   * at the next INFO of a 10 s period, both fixed in Redis. A test that has no use for that wait
   * does the conversion itself, as Sentinel would (its clients dropped too).
   */
  replicaOf(port: number, primary: number): Promise<void>;
}

export interface RedisClusterPeer extends Nodes {
  readonly nodes: readonly HostPort[];
  /** Ports of the nodes that hold slots now. */
  primaryPorts(): Promise<number[]>;
  /** Waits until every reachable node says cluster_state:ok with every slot served by a live node. */
  awaitHealthy(timeoutMs?: number): Promise<void>;
}

export interface TopologyOptions {
  /** The data nodes' password (requirepass, masterauth). */
  readonly password?: string;
  /** The sentinels' own password. */
  readonly sentinelPassword?: string;
  readonly masterName?: string;
}

async function freePorts(n: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < n) ports.add(await freePort());
  return [...ports];
}

function nodeScript(action: 'kill' | 'start', dir: string, port: number, password: string | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const env = { ...process.env, ...(password !== undefined ? { REDIS_PASSWORD: password } : {}) };
    execFile('bash', [NODE_SCRIPT, action, dir, String(port)], { timeout: 15_000, env }, (err, _out, stderr) =>
      err === null ? resolve() : reject(new Error(`redis-node.sh ${action} ${port} failed: ${stderr.trim() || err.message}`)),
    );
  });
}

/** One short-lived connection for a question to a node or a sentinel; no retry, 1 s to connect. */
export async function ask<T>(port: number, password: string | undefined, question: (r: Redis) => Promise<T>): Promise<T> {
  const r = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 1_000, ...(password !== undefined ? { password } : {}) });
  r.on('error', () => undefined);
  try {
    await r.connect();
    return await question(r);
  } finally {
    r.disconnect();
  }
}

/**
 * Whether a replica of the primary at `port` acknowledges a write now: SET and DEL of a probe key
 * the node serves, then WAIT 1 100, as scripts/peers/redis-nodes.sh's wait_replica_acks (which
 * says why INFO's `state=online` is not enough). That is what a replicated write needs: WAIT 1.
 * On a Cluster a key of another node's slot answers MOVED and writes nothing, so the next key is
 * tried (a WAIT after no write would count every online replica).
 */
async function acknowledges(port: number, password: string | undefined): Promise<boolean> {
  return ask(port, password, async (r) => {
    for (let i = 0; i < 32; i++) {
      const key = `peer:replication-probe:${i}`;
      const [set, , wait] = (await r.pipeline().set(key, '1').del(key).wait(1, 100).exec()) ?? [];
      if (set?.[0] != null && /^MOVED\b/.test(set[0].message)) continue;
      return set?.[0] == null && wait?.[0] == null && Number(wait?.[1]) >= 1;
    }
    return false;
  }).catch(() => false);
}

function nodesOf(peer: Peer, nodePorts: readonly number[], password: string | undefined, primaries: () => Promise<number[]>): Nodes {
  return {
    nodePorts,
    dir: peer.dir,
    kill: (port) => nodeScript('kill', peer.dir, port, password),
    start: (port) => nodeScript('start', peer.dir, port, password),
    stop: () => peer.stop(),
    async awaitReplicated(timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline) {
        const ports = await primaries().catch(() => []);
        const acked = await Promise.all(ports.map((port) => acknowledges(port, password)));
        if (ports.length > 0 && acked.every(Boolean)) return;
        await sleep(100);
      }
      throw new Error(`not every primary had a replica acknowledging a write within ${timeoutMs} ms`);
    },
  };
}

export async function startRedisSentinel(options: TopologyOptions = {}): Promise<RedisSentinelPeer> {
  const [primary, replica, ...sentinelPorts] = await freePorts(5);
  const masterName = options.masterName ?? 'svc';
  const env: Record<string, string> = { MASTER_NAME: masterName };
  if (options.password !== undefined) env.REDIS_PASSWORD = options.password;
  if (options.sentinelPassword !== undefined) env.SENTINEL_PASSWORD = options.sentinelPassword;
  const peer = await startPeer('start-redis-sentinel.sh', [primary, replica, ...sentinelPorts].map(String), env);
  const sentinels = sentinelPorts.map((port) => ({ host: '127.0.0.1', port }));

  async function reported(): Promise<number[]> {
    const answers = await Promise.all(
      sentinelPorts.map((port) =>
        ask(port, options.sentinelPassword, (r) => r.call('SENTINEL', 'get-master-addr-by-name', masterName) as Promise<[string, string] | null>).catch(() => null),
      ),
    );
    return answers.flatMap((a) => (a === null ? [] : [Number(a[1])]));
  }
  async function isPrimary(port: number): Promise<boolean> {
    const role = await ask(port, options.password, (r) => r.call('ROLE') as Promise<unknown[]>).catch(() => null);
    return role?.[0] === 'master';
  }

  const self: RedisSentinelPeer = {
    ...nodesOf(peer, [primary as number, replica as number], options.password, async () => [await self.primaryPort()]),
    masterName,
    sentinels,
    async primaryPort() {
      const [first] = await reported();
      if (first === undefined) throw new Error('no sentinel answered get-master-addr-by-name');
      return first;
    },
    async awaitPrimaryOtherThan(old, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline) {
        const ports = await reported();
        const next = ports[0];
        if (next !== undefined && next !== old && ports.every((p) => p === next) && (await isPrimary(next))) return next;
        await sleep(100);
      }
      throw new Error(`the sentinels did not name a new primary (other than ${old}) within ${timeoutMs} ms`);
    },
    async replicaOf(port, primary) {
      // What Sentinel sends (sentinelSendSlaveOf): the node's clients are dropped with the switch,
      // so that they ask the sentinels again rather than go on with a replica.
      await ask(port, options.password, (r) => r.multi().call('REPLICAOF', '127.0.0.1', String(primary)).call('CLIENT', 'KILL', 'TYPE', 'normal').call('CLIENT', 'KILL', 'TYPE', 'pubsub').exec());
    },
    async failover() {
      const old = await self.primaryPort();
      // A replica that just came back is not a candidate until the sentinels saw it up (NOGOODSLAVE).
      const deadline = Date.now() + 20_000;
      for (;;) {
        const err = await ask(sentinelPorts[0] as number, options.sentinelPassword, (r) => r.call('SENTINEL', 'FAILOVER', masterName)).then(() => undefined, (e: unknown) => e as Error);
        if (err === undefined) break;
        if (!/NOGOODSLAVE|INPROG/.test(err.message) || Date.now() > deadline) throw err;
        await sleep(200);
      }
      return self.awaitPrimaryOtherThan(old);
    },
  };
  return self;
}

export async function startRedisCluster(options: Pick<TopologyOptions, 'password'> = {}): Promise<RedisClusterPeer> {
  const ports = await freePorts(12);
  const nodePorts = ports.slice(0, 6);
  const env: Record<string, string> = options.password !== undefined ? { REDIS_PASSWORD: options.password } : {};
  const peer = await startPeer('start-redis-cluster.sh', ports.map(String), env);
  const base = nodesOf(peer, nodePorts, options.password, () => slotOwners());

  async function slotOwners(): Promise<number[]> {
    for (const port of nodePorts) {
      const slots = await ask(port, options.password, (r) => r.call('CLUSTER', 'SLOTS') as Promise<[number, number, [string, number, ...unknown[]], ...unknown[]][]>).catch(() => null);
      if (slots !== null) return [...new Set(slots.map((range) => Number(range[2][1])))];
    }
    throw new Error('no cluster node answered CLUSTER SLOTS');
  }

  return {
    ...base,
    nodes: nodePorts.map((port) => ({ host: '127.0.0.1', port })),
    primaryPorts: slotOwners,
    async awaitHealthy(timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline) {
        const states = await Promise.all(
          nodePorts.map((port) => ask(port, options.password, (r) => r.call('CLUSTER', 'INFO') as Promise<string>).catch(() => null)),
        );
        const live = states.filter((s): s is string => s !== null);
        if (live.length > 0 && live.every((s) => s.includes('cluster_state:ok'))) {
          const owners = await slotOwners().catch(() => []);
          const roles = await Promise.all(owners.map((p) => ask(p, options.password, (r) => r.call('ROLE') as Promise<unknown[]>).catch(() => null)));
          if (owners.length === 3 && roles.every((role) => role?.[0] === 'master')) return;
        }
        await sleep(100);
      }
      throw new Error(`the cluster was not healthy within ${timeoutMs} ms`);
    },
  };
}

/** The state backend's view of a started topology (the svc-server options would give the same). */
export function sentinelTopology(peer: RedisSentinelPeer, options: TopologyOptions = {}): Extract<RedisTopology, { kind: 'sentinel' }> {
  return {
    kind: 'sentinel',
    sentinels: peer.sentinels,
    masterName: peer.masterName,
    auth: { ...(options.password !== undefined ? { password: options.password } : {}), tls: false },
    db: 0,
    ...(options.sentinelPassword !== undefined ? { sentinelPassword: options.sentinelPassword } : {}),
  };
}

export function clusterTopology(peer: RedisClusterPeer, options: Pick<TopologyOptions, 'password'> = {}): Extract<RedisTopology, { kind: 'cluster' }> {
  return { kind: 'cluster', nodes: peer.nodes.slice(0, 2), auth: { ...(options.password !== undefined ? { password: options.password } : {}), tls: false } };
}

/** A backend that has answered once (Sentinel and Cluster first find their primary and slots). */
export async function openReadyState(topology: RedisTopology): Promise<RedisState> {
  const state = createRedisState({ topology, log: { info: () => undefined, warn: () => undefined } });
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      await state.ping();
      return state;
    } catch (err: unknown) {
      if (Date.now() > deadline) throw err;
      await sleep(50);
    }
  }
}
