/**
 * Where the shared state lives: one Redis (a URL), a Sentinel-watched primary, or a Redis
 * Cluster. Parsed once from the command line and the environment (parseRedisTopology), with
 * errors that name the flag and its variable and never echo a password.
 */

export interface HostPort {
  readonly host: string;
  readonly port: number;
}

/** Credentials and TLS of the data nodes, for Sentinel and Cluster (a URL carries its own). */
export interface RedisNodeAuth {
  readonly username?: string;
  readonly password?: string;
  readonly tls: boolean;
}

export type RedisTopology =
  | { readonly kind: 'standalone'; readonly url: string }
  | {
      readonly kind: 'sentinel';
      readonly sentinels: readonly HostPort[];
      readonly masterName: string;
      readonly auth: RedisNodeAuth;
      readonly db: number;
      /** The sentinels' own credentials, apart from the data nodes'. */
      readonly sentinelUsername?: string;
      readonly sentinelPassword?: string;
    }
  | { readonly kind: 'cluster'; readonly nodes: readonly HostPort[]; readonly auth: RedisNodeAuth };

export type RedisTopologyKind = RedisTopology['kind'];

/** The raw inputs: flags win over their variables; '' counts as not given. */
export interface RedisTopologyInput {
  readonly redis?: string | undefined;
  readonly sentinels?: string | undefined;
  readonly sentinelMaster?: string | undefined;
  readonly cluster?: string | undefined;
  readonly tls?: boolean | undefined;
  readonly db?: string | undefined;
  /** From the environment only: a flag would show the password in `ps`. */
  readonly username?: string | undefined;
  readonly password?: string | undefined;
  readonly sentinelUsername?: string | undefined;
  readonly sentinelPassword?: string | undefined;
}

export class RedisConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RedisConfigError';
  }
}

const REDIS = '--redis (or SVC_REDIS_URL)';
const SENTINELS = '--redis-sentinel (or SVC_REDIS_SENTINELS)';
const MASTER = '--redis-sentinel-master (or SVC_REDIS_SENTINEL_MASTER)';
const CLUSTER = '--redis-cluster (or SVC_REDIS_CLUSTER)';
const DB = '--redis-db (or SVC_REDIS_DB)';
const TLS = '--redis-tls (or SVC_REDIS_TLS)';
/** At most this many seed addresses: a list that long is a mistake, not a topology. */
const MAX_ADDRESSES = 32;

/** Undefined when no Redis is configured (state in memory). Throws RedisConfigError. */
export function parseRedisTopology(input: RedisTopologyInput): RedisTopology | undefined {
  const given = (v: string | undefined): v is string => v !== undefined && v !== '';
  const chosen = [given(input.redis) && REDIS, given(input.sentinels) && SENTINELS, given(input.cluster) && CLUSTER].filter((x): x is string => x !== false);
  if (chosen.length > 1) throw new RedisConfigError(`${chosen.join(' and ')} exclude each other: give one Redis topology`);
  const nodeOptions = [given(input.username) && 'SVC_REDIS_USERNAME', given(input.password) && 'SVC_REDIS_PASSWORD', input.tls === true && TLS, given(input.db) && DB].filter((x): x is string => x !== false);
  const sentinelOptions = [given(input.sentinelUsername) && 'SVC_REDIS_SENTINEL_USERNAME', given(input.sentinelPassword) && 'SVC_REDIS_SENTINEL_PASSWORD', given(input.sentinelMaster) && MASTER].filter((x): x is string => x !== false);
  if (given(input.redis)) {
    if (nodeOptions.length > 0) throw new RedisConfigError(`${nodeOptions.join(', ')}: only with --redis-sentinel or --redis-cluster; ${REDIS} carries its user, password, TLS (rediss://) and database in the URL`);
    if (sentinelOptions.length > 0) throw new RedisConfigError(`${sentinelOptions.join(', ')}: only with --redis-sentinel`);
    return { kind: 'standalone', url: checkedRedisUrl(input.redis) };
  }
  const auth: RedisNodeAuth = {
    ...(given(input.username) ? { username: input.username } : {}),
    ...(given(input.password) ? { password: input.password } : {}),
    tls: input.tls === true,
  };
  if (given(input.sentinels)) {
    if (!given(input.sentinelMaster)) throw new RedisConfigError(`${SENTINELS} needs ${MASTER}: the name the sentinels monitor the primary under`);
    if (!/^[A-Za-z0-9._-]{1,128}$/.test(input.sentinelMaster)) throw new RedisConfigError(`${MASTER}: '${input.sentinelMaster.slice(0, 40)}' is not a master name (letters, digits, '.', '_', '-')`);
    return {
      kind: 'sentinel',
      sentinels: parseHostPorts(input.sentinels, SENTINELS),
      masterName: input.sentinelMaster,
      auth,
      db: given(input.db) ? parseDb(input.db) : 0,
      ...(given(input.sentinelUsername) ? { sentinelUsername: input.sentinelUsername } : {}),
      ...(given(input.sentinelPassword) ? { sentinelPassword: input.sentinelPassword } : {}),
    };
  }
  if (sentinelOptions.length > 0) throw new RedisConfigError(`${sentinelOptions.join(', ')}: only with ${SENTINELS}`);
  if (given(input.cluster)) {
    if (given(input.db) && input.db !== '0') throw new RedisConfigError(`${DB}: a Redis Cluster has only database 0`);
    return { kind: 'cluster', nodes: parseHostPorts(input.cluster, CLUSTER), auth };
  }
  if (nodeOptions.length > 0) throw new RedisConfigError(`${nodeOptions.join(', ')}: only with --redis-sentinel or --redis-cluster`);
  return undefined;
}

/**
 * Credentials read from the environment only, given where no topology reads them: the Sentinel
 * user and password without --redis-sentinel, the node user and password without any Redis. They
 * grant nothing there, so `validate` (which checks a config dir, perhaps on a machine whose
 * environment holds them for another svc) warns and leaves them out rather than refusing to run;
 * a server still refuses them (parseRedisTopology): it may have been meant for Sentinel.
 */
export function withoutUnusedCredentials(input: RedisTopologyInput): { readonly input: RedisTopologyInput; readonly unused: readonly string[] } {
  const given = (v: string | undefined): boolean => v !== undefined && v !== '';
  const noSentinels = !given(input.sentinels);
  const noRedis = noSentinels && !given(input.redis) && !given(input.cluster);
  const unused: [keyof RedisTopologyInput, string, boolean][] = [
    ['sentinelUsername', 'SVC_REDIS_SENTINEL_USERNAME', noSentinels],
    ['sentinelPassword', 'SVC_REDIS_SENTINEL_PASSWORD', noSentinels],
    ['username', 'SVC_REDIS_USERNAME', noRedis],
    ['password', 'SVC_REDIS_PASSWORD', noRedis],
  ];
  const dropped = unused.filter(([key, , applies]) => applies && given(input[key] as string | undefined));
  const rest: Record<string, unknown> = { ...input };
  for (const [key] of dropped) delete rest[key];
  return { input: rest as RedisTopologyInput, unused: dropped.map(([, name]) => name) };
}

/** `HOST:PORT[,HOST:PORT…]`; IPv6 in brackets. */
export function parseHostPorts(value: string, name: string): HostPort[] {
  const parts = value.split(',').map((p) => p.trim());
  if (parts.length > MAX_ADDRESSES) throw new RedisConfigError(`${name}: ${parts.length} addresses, at most ${MAX_ADDRESSES}`);
  const seen = new Set<string>();
  return parts.map((part) => {
    const match = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(part);
    const port = Number(match?.[2]);
    if (match === null || port < 1 || port > 65535) {
      throw new RedisConfigError(`${name}: '${part.slice(0, 80)}' is not HOST:PORT (for example 10.0.0.5:26379); separate several with commas`);
    }
    const host = (match[1] as string).replace(/^\[|\]$/g, '');
    if (seen.has(`${host}:${port}`)) throw new RedisConfigError(`${name}: ${part} is given twice`);
    seen.add(`${host}:${port}`);
    return { host, port };
  });
}

function parseDb(value: string): number {
  if (!/^\d{1,2}$/.test(value)) throw new RedisConfigError(`${DB}: '${value.slice(0, 20)}' is not a database number from 0 to 99`);
  return Number(value);
}

/**
 * `redis://[user:password@]host[:port][/db]` or `rediss://` (TLS). Anything else is refused
 * without echoing the value (it may hold the password): ioredis reads an unknown scheme as a
 * Unix socket path and logs it whole, and a non-numeric db crashes it on connect.
 */
export function checkedRedisUrl(value: string): string {
  const problem = redisUrlProblem(value);
  if (problem === undefined) return value;
  throw new RedisConfigError(`${REDIS}: ${problem}; use redis://[user:password@]host[:port][/db], or rediss:// for TLS`);
}

function redisUrlProblem(value: string): string | undefined {
  if (!URL.canParse(value)) return 'not a URL';
  const url = new URL(value);
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') return `the scheme is ${url.protocol.slice(0, 12)}, not redis: or rediss:`;
  if (url.hostname === '') return 'no host';
  if (!/^\/?(\d{1,2})?$/.test(url.pathname)) return 'the path must be a database number (/0 to /99) or nothing';
  return undefined;
}

/** For logs and messages: never a password. */
export function describeTopology(topology: RedisTopology): string {
  switch (topology.kind) {
    case 'standalone':
      return `standalone redis at ${redactUrl(topology.url)}`;
    case 'sentinel':
      return `redis sentinel, master '${topology.masterName}' (sentinels ${topology.sentinels.map(hostPort).join(', ')}${topology.db !== 0 ? `, db ${topology.db}` : ''}${topology.auth.tls ? ', TLS' : ''})`;
    case 'cluster':
      return `redis cluster (seed nodes ${topology.nodes.map(hostPort).join(', ')}${topology.auth.tls ? ', TLS' : ''})`;
  }
}

export const hostPort = ({ host, port }: HostPort): string => (host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`);

/** host:port/db without user or password, for messages and logs. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.host}${u.pathname === '/' ? '' : u.pathname}`;
  } catch {
    return '(invalid redis url)';
  }
}
