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
   * Waits until every primary has a replica online and caught up (INFO replication: state=online,
   * lag ≤ 1 s), so that writes which wait for a replica (WAIT) succeed again: a node started
   * again answers PING long before its full resynchronisation is over.
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

function nodesOf(peer: Peer, nodePorts: readonly number[], password: string | undefined, primaries: () => Promise<number[]>): Nodes {
  return {
    nodePorts,
    dir: peer.dir,
    kill: (port) => nodeScript('kill', peer.dir, port, password),
    start: (port) => nodeScript('start', peer.dir, port, password),
    stop: () => peer.stop(),
    async awaitReplicated(timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      const caughtUp = (info: string | null) => info !== null && /^slave\d+:.*state=online,.*lag=[01]\b/m.test(info);
      while (Date.now() < deadline) {
        const ports = await primaries().catch(() => []);
        const infos = await Promise.all(ports.map((port) => ask(port, password, (r) => r.info('replication')).catch(() => null)));
        if (ports.length > 0 && infos.every(caughtUp)) return;
        await sleep(100);
      }
      throw new Error(`not every primary had a replica caught up within ${timeoutMs} ms`);
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
