/**
 * ioredis clients for each topology, all with the fail-fast settings of ./redis.ts.
 *
 * Sentinel: `failoverDetector` subscribes to the sentinels' +switch-master and reconnects at
 * once; without it ioredis keeps writing to the old primary until Sentinel demotes it (and
 * then gets READONLY, which `reconnectOnError` also turns into a reconnect through the
 * sentinels).
 *
 * Cluster: MOVED and ASK are followed by ioredis (maxRedirections); the slot map is refreshed
 * every second and on every MOVED, so a promoted replica is found within about a second of
 * the promotion. The subscriber is a plain connection to one node (any node hears every
 * PUBLISH of the cluster), moved to another node when its own is gone: ioredis's cluster
 * subscriber resubscribes without telling anyone whether it worked (./redis-subscriber.ts
 * must know when a subscription may have missed messages).
 */
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import { KEY_PREFIX } from './state.js';
import type { HostPort, RedisNodeAuth, RedisTopology } from './redis-topology.js';
import { traceRedisCommands } from './redis-spans.js';
import { tracingOn } from '../tracing/spans.js';

export type RedisClient = Redis | Cluster;

/** A command that has not answered by then (half-open socket, stuck server) fails. */
export const COMMAND_TIMEOUT_MS = 500;
/** Reconnect backoff: 50 ms more per attempt, capped so recovery takes at most ~1 s. */
export const RETRY_MAX_MS = 1_000;
export const CONNECT_TIMEOUT_MS = 2_000;
/** Cluster: how often the slot map is read again without a MOVED to prompt it. */
export const SLOTS_REFRESH_MS = 1_000;

const retryStrategy = (times: number): number => Math.min(times * 50, RETRY_MAX_MS);

/** The fail-fast settings (./redis.ts says why each). */
const FAIL_FAST = {
  enableOfflineQueue: false,
  autoResendUnfulfilledCommands: false,
  maxRetriesPerRequest: 0,
  commandTimeout: COMMAND_TIMEOUT_MS,
  connectTimeout: CONNECT_TIMEOUT_MS,
  retryStrategy,
} satisfies RedisOptions;

export interface ClientOptions {
  readonly connectionName: string;
  /** The subscriber connection: svc subscribes again itself (./redis-subscriber.ts). */
  readonly subscriber?: boolean;
  /** Longer than COMMAND_TIMEOUT_MS, for a connection whose commands wait for replicas. */
  readonly commandTimeoutMs?: number;
}

function nodeAuth(auth: RedisNodeAuth): { username?: string; password?: string; tls?: object } {
  return {
    ...(auth.username !== undefined ? { username: auth.username } : {}),
    ...(auth.password !== undefined ? { password: auth.password } : {}),
    ...(auth.tls ? { tls: {} } : {}),
  };
}

/** A demoted primary answers writes with READONLY: reconnect (through the sentinels). */
function reconnectOnReadonly(err: Error): boolean {
  return err.message.startsWith('READONLY');
}

export function openClient(topology: RedisTopology, options: ClientOptions): RedisClient {
  const client = openUntraced(topology, options);
  // The subscriber's messages belong to no request; with tracing off the client is left as it is.
  return tracingOn() && options.subscriber !== true ? traceRedisCommands(client) : client;
}

function openUntraced(topology: RedisTopology, options: ClientOptions): RedisClient {
  const common = {
    ...FAIL_FAST,
    connectionName: options.connectionName,
    commandTimeout: options.commandTimeoutMs ?? COMMAND_TIMEOUT_MS,
    ...(options.subscriber === true ? { autoResubscribe: false } : {}),
  };
  const prefixed = options.subscriber === true ? {} : { keyPrefix: KEY_PREFIX, enableAutoPipelining: true };
  switch (topology.kind) {
    case 'standalone':
      return new Redis(topology.url, { ...common, ...prefixed });
    case 'sentinel':
      return watchFailoverDetector(new Redis({
        ...common,
        ...prefixed,
        ...nodeAuth(topology.auth),
        sentinels: topology.sentinels.map(({ host, port }) => ({ host, port })),
        name: topology.masterName,
        role: 'master',
        db: topology.db,
        ...(topology.sentinelUsername !== undefined ? { sentinelUsername: topology.sentinelUsername } : {}),
        ...(topology.sentinelPassword !== undefined ? { sentinelPassword: topology.sentinelPassword } : {}),
        ...(topology.auth.tls ? { enableTLSForSentinelMode: true, sentinelTLS: {} } : {}),
        sentinelRetryStrategy: retryStrategy,
        failoverDetector: true,
        reconnectOnError: reconnectOnReadonly,
      }));
    case 'cluster':
      if (options.subscriber === true) return clusterSubscriber(topology.nodes, topology.auth, SUBSCRIBER, 0);
      return new Cluster(topology.nodes.map(({ host, port }) => ({ host, port })), {
        ...prefixed,
        enableOfflineQueue: false,
        ...CLUSTER_OPTIONS,
        redisOptions: {
          connectionName: common.connectionName,
          commandTimeout: common.commandTimeout,
          connectTimeout: CONNECT_TIMEOUT_MS,
          autoResendUnfulfilledCommands: false,
          maxRetriesPerRequest: 0,
          ...nodeAuth(topology.auth),
        },
      });
  }
}

interface FailoverDetectorInternals {
  connector?: { failoverDetector?: { cleanup(): void; sentinels?: { client: { on(event: 'error', f: () => void): unknown; listenerCount(event: string): number } }[] } | null };
}

/**
 * ioredis's failover detector (6.0.0) opens one connection per sentinel without an 'error'
 * listener (every failed reconnect to a sentinel that is down prints a stack trace), and one
 * set up while the client is being closed outlives it, reconnecting to the sentinels for ever.
 * Its connections get a listener (errors are the sentinels', whose outage the main connection
 * reports), and a detector subscribed after the client closed is released at once.
 */
function watchFailoverDetector(client: Redis): Redis {
  const connector = (client as unknown as FailoverDetectorInternals).connector;
  client.on('failoverSubscribed', () => {
    const detector = connector?.failoverDetector;
    for (const { client: sentinel } of detector?.sentinels ?? []) {
      if (sentinel.listenerCount('error') === 0) sentinel.on('error', () => undefined);
    }
    if (client.status === 'end' || client.status === 'close') detector?.cleanup();
  });
  client.on('end', () => connector?.failoverDetector?.cleanup());
  return client;
}

const CLUSTER_OPTIONS = {
    scaleReads: 'master',
    maxRedirections: 16,
    retryDelayOnMoved: 0,
    retryDelayOnFailover: 100,
    retryDelayOnClusterDown: 100,
    retryDelayOnTryAgain: 100,
    slotsRefreshTimeout: CONNECT_TIMEOUT_MS,
    slotsRefreshInterval: SLOTS_REFRESH_MS,
    clusterRetryStrategy: retryStrategy,
} satisfies ClusterOptions;

/**
 * A plain connection to one cluster node for SUBSCRIBE. It does not reconnect by itself
 * (retryStrategy null: 'end' after the first loss); ./redis-subscriber.ts opens the next one,
 * on the next node of `nodes` or of the slot map.
 */
function clusterSubscriber(nodes: readonly HostPort[], auth: RedisNodeAuth, common: typeof SUBSCRIBER, attempt: number): Redis {
  const node = nodes[attempt % nodes.length] as HostPort;
  return new Redis({ ...common, ...nodeAuth(auth), host: node.host, port: node.port, retryStrategy: () => null });
}

/** The next subscriber connection after `attempt` ones were lost; the cluster's live nodes first. */
export function openSubscriber(topology: RedisTopology, main: RedisClient, attempt: number): Redis {
  if (topology.kind !== 'cluster' || !(main instanceof Cluster)) {
    return openClient(topology, { connectionName: 'svc-subscriber', subscriber: true }) as Redis;
  }
  const known = main.nodes('all').map((n) => ({ host: n.options.host ?? '127.0.0.1', port: n.options.port ?? 6379 }));
  const nodes = known.length > 0 ? known : topology.nodes;
  return clusterSubscriber(nodes, topology.auth, SUBSCRIBER, attempt);
}

const SUBSCRIBER = { ...FAIL_FAST, connectionName: 'svc-subscriber', autoResubscribe: false };
