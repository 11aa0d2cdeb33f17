/**
 * Why a Redis topology cannot be used at start, in one line an operator can act on: no
 * sentinel knows the master name, a password is wrong, the cluster is down. Asked of the
 * peers directly (one short connection each), because ioredis only retries and says "all
 * sentinels are unreachable" (or, for one Redis, "reconnecting") for every one of these.
 */
import { Redis, type RedisOptions } from 'ioredis';
import { hostPort, type HostPort, type RedisTopology } from './redis-topology.js';

const ASK_TIMEOUT_MS = 2_000;

/** One attempt, no retry, no queue: the answer (or the refusal) of this connection only. */
const ASK_OPTIONS = {
  lazyConnect: true,
  enableOfflineQueue: false,
  enableReadyCheck: false,
  maxRetriesPerRequest: 0,
  retryStrategy: () => null,
  connectTimeout: ASK_TIMEOUT_MS,
  commandTimeout: ASK_TIMEOUT_MS,
} satisfies RedisOptions;

function ask<T>(at: HostPort, auth: { username?: string | undefined; password?: string | undefined }, tls: boolean, question: (r: Redis) => Promise<T>): Promise<T> {
  return askOn(new Redis({
    host: at.host,
    port: at.port,
    ...(auth.username !== undefined ? { username: auth.username } : {}),
    ...(auth.password !== undefined ? { password: auth.password } : {}),
    ...(tls ? { tls: {} } : {}),
    ...ASK_OPTIONS,
  }), question);
}

async function askOn<T>(r: Redis, question: (r: Redis) => Promise<T>): Promise<T> {
  // A refused password reaches the 'error' listener; connect() then only says the connection closed.
  let refused: unknown;
  r.on('error', (err: unknown) => (refused ??= err));
  try {
    try {
      await r.connect();
    } catch (err: unknown) {
      throw refused ?? err;
    }
    return await question(r);
  } finally {
    r.disconnect();
  }
}

const isAuthError = (err: unknown): boolean => err instanceof Error && /WRONGPASS|NOAUTH|invalid password|invalid username-password|AUTH <password> called without/i.test(err.message);

/**
 * Undefined when the topology answered as expected; otherwise the reason, naming no secret.
 * One Redis that merely does not answer is no start problem (the server starts and reconnects):
 * only a refused password is.
 */
export async function redisStartProblem(topology: RedisTopology, lastError: unknown): Promise<string | undefined> {
  if (topology.kind === 'sentinel') {
    const answers = await Promise.all(
      topology.sentinels.map((s) =>
        ask(s, { username: topology.sentinelUsername, password: topology.sentinelPassword }, topology.auth.tls, (r) => r.call('SENTINEL', 'get-master-addr-by-name', topology.masterName)).then(
          (reply) => ({ s, reply, err: undefined as unknown }),
          (err: unknown) => ({ s, reply: undefined, err }),
        ),
      ),
    );
    if (answers.some((a) => isAuthError(a.err))) return 'a sentinel refused the Sentinel password (SVC_REDIS_SENTINEL_PASSWORD)';
    const answered = answers.filter((a) => a.err === undefined);
    if (answered.length === 0) return `no sentinel answered (${topology.sentinels.map(hostPort).join(', ')})`;
    if (answered.every((a) => a.reply === null)) return `no sentinel knows a master named '${topology.masterName}' (--redis-sentinel-master)`;
    const primary = answered.map((a) => a.reply).find((r): r is [string, string] => Array.isArray(r));
    if (primary !== undefined) {
      const at = { host: primary[0], port: Number(primary[1]) };
      const pinged = await ask(at, topology.auth, topology.auth.tls, (r) => r.ping()).catch((err: unknown) => err);
      if (isAuthError(pinged)) return `the primary at ${hostPort(at)} refused the password (SVC_REDIS_USERNAME / SVC_REDIS_PASSWORD)`;
      if (pinged instanceof Error) return `the primary the sentinels name, ${hostPort(at)}, does not answer (${pinged.message})`;
    }
  }
  if (topology.kind === 'standalone') {
    // The client's own error only says "reconnecting": a refused password is seen on a connection of its own.
    const pinged = isAuthError(lastError) ? lastError : await askOn(new Redis(topology.url, ASK_OPTIONS), (r) => r.ping()).catch((err: unknown) => err);
    return isAuthError(pinged) ? 'Redis refused the user or password of the --redis URL (SVC_REDIS_URL)' : undefined;
  }
  if (isAuthError(lastError)) return 'Redis refused the password (SVC_REDIS_USERNAME / SVC_REDIS_PASSWORD)';
  if (topology.kind === 'cluster') {
    const infos = await Promise.all(topology.nodes.map((n) => ask(n, topology.auth, topology.auth.tls, (r) => r.call('CLUSTER', 'INFO') as Promise<string>).catch((err: unknown) => err)));
    if (infos.some(isAuthError)) return 'Redis refused the password (SVC_REDIS_USERNAME / SVC_REDIS_PASSWORD)';
    const up = infos.filter((i): i is string => typeof i === 'string');
    if (up.length === 0) return `no cluster node answered (${topology.nodes.map(hostPort).join(', ')})`;
    if (!up.some((i) => i.includes('cluster_state:ok'))) return 'the cluster is down (cluster_state:fail: slots without a live primary)';
  }
  return undefined;
}
